"""Run under `mpiexec -n P` with MINIJAX_NUM_CPU_DEVICES=L: sharded jit and shard_map over
a mesh of every process's devices (global Arrays in and out), for elementwise, reduction
and dot programs and a data-parallel training step whose gradients are reduced across the
processes. Each result is checked against NumPy (float64) and against the same program run
unsharded in one process. Prints `SHARDED OK <rank>`.
"""

import functools
import sys

import numpy as np
from world import join

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.experimental import multihost_utils as mhu
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P

TOL = {"rtol": 2e-5, "atol": 2e-5}


def data(shape, seed):
    """The same host values in every process."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def whole(x):
    """The whole value of a (global) Array."""
    return mhu.process_allgather(x, tiled=True)


def loss(params, x, y):
    pred = jnp.tanh(x @ params["w"]) @ params["v"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def numpy_loss_and_grads(params, x, y):
    """float64 reference for loss() and its gradients."""
    w, v, b = (params[k].astype(np.float64) for k in ("w", "v", "b"))
    x, y = x.astype(np.float64), y.astype(np.float64)
    h = np.tanh(x @ w)
    r = h @ v + b - y
    dr = 2 * r / r.size
    dh = np.outer(dr, v) * (1 - h ** 2)
    return (r ** 2).mean(), {"b": dr.sum(), "v": h.T @ dr, "w": x.T @ dh}


def check_tree(got, want, **tol):
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], **(tol or TOL))


def main():
    me, procs, n, total = join()
    mesh = minijax.make_mesh((total,), ("x",))
    grid = Mesh(np.array(minijax.devices()).reshape(procs, n), ("p", "d"))
    rows, rep = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())

    batch = 4 * total
    X, Y = data((batch, 3), 1), data((batch,), 2)
    params = {"w": data((3, 5), 3), "v": data((5,), 4), "b": np.float32(0.25)}
    # Each process loads its own part of the batch.
    per = batch // procs
    gx, gy = minijax.make_array_from_process_local_data(
        rows, (X[me * per:(me + 1) * per], Y[me * per:(me + 1) * per]))
    assert not gx.is_fully_addressable

    # Elementwise, reductions and dots in several shardings: sharded jit == NumPy.
    ew = minijax.jit(lambda x: jnp.sin(x) * 2 + 1, in_shardings=rows, out_shardings=rows)(gx)
    assert ew.sharding == rows and not ew.is_fully_addressable
    np.testing.assert_allclose(whole(ew), np.sin(X) * 2 + 1, **TOL)
    # A global output fed to the next program as it is laid out, and laid out otherwise.
    again = minijax.jit(lambda x: x - 1, in_shardings=rows, out_shardings=rows)(ew)
    np.testing.assert_allclose(whole(again), np.sin(X) * 2, **TOL)
    by_cols = NamedSharding(mesh, P(None, "x")) if X.shape[1] % total == 0 else rep
    moved = minijax.jit(lambda x: x * 3, in_shardings=by_cols, out_shardings=rows)(ew)
    np.testing.assert_allclose(whole(moved), (np.sin(X) * 2 + 1) * 3, **TOL)

    total_sum = minijax.jit(jnp.sum, in_shardings=rows, out_shardings=rep)(gx)
    np.testing.assert_allclose(np.asarray(total_sum), X.astype(np.float64).sum(), **TOL)
    col_max = minijax.jit(lambda x: jnp.max(x, axis=0), in_shardings=rows,
                          out_shardings=rep)(gx)
    np.testing.assert_array_equal(np.asarray(col_max), X.max(0))
    row_sum = minijax.jit(lambda x: jnp.sum(x, axis=1), in_shardings=rows,
                          out_shardings=rows)(gx)
    np.testing.assert_allclose(whole(row_sum), X.sum(1), **TOL)

    W = data((3, 4), 5)
    gw = minijax.device_put(W, rep)
    xw = minijax.jit(jnp.dot, in_shardings=(rows, rep), out_shardings=rows)(gx, gw)
    np.testing.assert_allclose(whole(xw), X @ W, **TOL)
    # Contracting dimension split over every device: an all-reduce across the processes.
    gram = minijax.jit(lambda x: x.T @ x, in_shardings=rows, out_shardings=rep)(gx)
    np.testing.assert_allclose(np.asarray(gram), X.T.astype(np.float64) @ X, **TOL)
    # Rows over processes, columns over each process's devices (2-D mesh).
    A, B = data((2 * procs, 6), 6), data((6, 2 * n), 7)
    ab = minijax.jit(jnp.dot, in_shardings=(NamedSharding(grid, P("p")),
                                            NamedSharding(grid, P(None, "d"))),
                     out_shardings=NamedSharding(grid, P("p", "d")))(A, B)
    assert ab.sharding == NamedSharding(grid, P("p", "d"))
    np.testing.assert_allclose(whole(ab), A @ B, **TOL)

    # Data-parallel step under sharded jit: params replicated, batch split over every
    # device of every process; equal to the full-batch step in one process.
    want_loss, want_grads = numpy_loss_and_grads(params, X, Y)
    single_loss, single_grads = minijax.jit(minijax.value_and_grad(loss))(params, X, Y)
    step = minijax.jit(minijax.value_and_grad(loss), in_shardings=(rep, rows, rows),
                       out_shardings=rep)
    got_loss, got_grads = step(params, gx, gy)
    assert not got_loss.is_fully_addressable and got_grads["w"].sharding == rep
    np.testing.assert_allclose(np.asarray(got_loss), want_loss, **TOL)
    check_tree(got_grads, want_grads)
    np.testing.assert_allclose(np.asarray(got_loss), np.asarray(single_loss), **TOL)
    check_tree(got_grads, {k: np.asarray(v) for k, v in single_grads.items()})

    # Plain jit on global Arrays runs partitioned as their shardings say.
    plain = minijax.jit(lambda a, b: a * 2 + b)(gx, gx)
    assert plain.sharding == rows, plain.sharding
    np.testing.assert_allclose(whole(plain), X * 3, **TOL)
    plain_loss, plain_grads = minijax.jit(minijax.value_and_grad(loss))(params, gx, gy)
    np.testing.assert_allclose(whole(plain_loss), want_loss, **TOL)
    check_tree({k: whole(v) for k, v in plain_grads.items()}, want_grads)

    # Eager operations on global Arrays run partitioned too (JAX's eager ops).
    eager = gx * 2 + 1
    assert eager.sharding == rows and not eager.is_fully_addressable
    np.testing.assert_allclose(whole(eager), X * 2 + 1, **TOL)
    np.testing.assert_allclose(whole(jnp.mean(gx, axis=0)), X.mean(0), **TOL)
    np.testing.assert_allclose(float(whole(gx.sum())), X.astype(np.float64).sum(), **TOL)
    np.testing.assert_allclose(whole(jnp.maximum(gx, 0.0)), np.maximum(X, 0))

    # A few SGD steps: the replicated params stay equal on every process and track the
    # single-process run.
    def sgd(p, x, y):
        value, g = minijax.value_and_grad(loss)(p, x, y)
        return value, minijax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
    sharded_sgd = minijax.jit(sgd, in_shardings=(rep, rows, rows), out_shardings=rep)
    plain_sgd = minijax.jit(sgd)
    p_sharded, p_single = minijax.device_put(params, rep), params
    for _ in range(3):
        l_sharded, p_sharded = sharded_sgd(p_sharded, gx, gy)
        l_single, p_single = plain_sgd(p_single, X, Y)
        np.testing.assert_allclose(np.asarray(l_sharded), np.asarray(l_single), **TOL)
    check_tree(p_sharded, {k: np.asarray(v) for k, v in p_single.items()})
    mhu.assert_equal({k: np.asarray(v) for k, v in p_sharded.items()}, "params diverged")

    # The same step with shard_map: per-device gradients, pmean across every process.
    @functools.partial(minijax.shard_map, mesh=mesh, in_specs=(P(), P("x"), P("x")),
                       out_specs=(P(), P()))
    def dp_step(p, x, y):
        value, g = minijax.value_and_grad(loss)(p, x, y)
        return lax.pmean(value, "x"), lax.pmean(g, "x")
    sm_loss, sm_grads = dp_step(params, gx, gy)
    assert not sm_loss.is_fully_addressable
    np.testing.assert_allclose(np.asarray(sm_loss), want_loss, **TOL)
    check_tree(sm_grads, want_grads)

    # Over the 2-D mesh: psum over both axes (processes x devices), and a per-process
    # partial sum that stays split over 'p'.
    gxg = minijax.device_put(X, NamedSharding(grid, P(("p", "d"))))

    @functools.partial(minijax.shard_map, mesh=grid, in_specs=P(("p", "d")),
                       out_specs=(P(), P("p")))
    def sums(x):
        return lax.psum(jnp.sum(x, 0), ("p", "d")), lax.psum(jnp.sum(x, 0, keepdims=True), "d")
    everything, per_process = sums(gxg)
    np.testing.assert_allclose(np.asarray(everything), X.astype(np.float64).sum(0), **TOL)
    np.testing.assert_allclose(whole(per_process),
                               X.reshape(procs, -1, 3).astype(np.float64).sum(1), **TOL)

    # shard_map under jit and under (eager) grad, on global Arrays.
    sq = minijax.shard_map(lambda b: lax.psum(jnp.sum(b * b, 0), "x"), mesh=mesh,
                           in_specs=P("x"), out_specs=P())
    np.testing.assert_allclose(whole(minijax.jit(sq)(gx)), (X.astype(np.float64) ** 2).sum(0),
                               **TOL)
    dx = minijax.grad(lambda v: jnp.sum(sq(v)))(gx)
    np.testing.assert_allclose(whole(dx), 2 * X, **TOL)

    # A shard_map output split over the processes, read back per process.
    scaled = minijax.shard_map(lambda x: x * (lax.axis_index("x") + 1.0), mesh=mesh,
                               in_specs=P("x"), out_specs=P("x"))(gx)
    factor = np.repeat(np.arange(1, total + 1, dtype=np.float32), batch // total)[:, None]
    np.testing.assert_allclose(whole(scaled), X * factor, **TOL)
    local = mhu.global_array_to_host_local_array(scaled, mesh, P("x"))
    np.testing.assert_allclose(np.asarray(local), (X * factor)[me * per:(me + 1) * per], **TOL)

    minijax.distributed.shutdown()
    print(f"SHARDED OK {me}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
