"""Run under `mpiexec -n P` with MINIJAX_NUM_CPU_DEVICES=L: pmap over every process's
devices (P * L participants, numbered process by process), its collectives crossing
processes over MPI, against NumPy references. Prints `PMAP OK <rank>`.
"""

import sys

import numpy as np
from world import join

import minijax
import minijax.numpy as jnp
from minijax import lax


def rows(shape, count, dtype=np.float32):
    """Global participant g's input is rows(...)[g] (every process can rebuild them)."""
    rng = np.random.default_rng(7)
    return (rng.standard_normal((count,) + shape) * 100).astype(dtype)


def main():
    me, procs, local, total = join()
    mine = slice(me * local, (me + 1) * local)

    xs = rows((5, 3), total)
    got = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(xs[mine])
    want = xs[0].copy()
    for g in range(1, total):  # the group order: the same bits on every participant
        want = want + xs[g]
    assert np.asarray(got).tobytes() == np.broadcast_to(want, (local, 5, 3)).tobytes()

    stats = minijax.pmap(lambda v: (lax.pmean(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i")),
                         axis_name="i")(xs[mine])
    np.testing.assert_allclose(np.asarray(stats[0])[0], xs.mean(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(stats[1])[0], xs.max(0))
    np.testing.assert_array_equal(np.asarray(stats[2])[0], xs.min(0))

    index = minijax.pmap(lambda v: lax.axis_index("i"), axis_name="i")(xs[mine])
    np.testing.assert_array_equal(np.asarray(index), np.arange(total)[mine])

    gathered = minijax.pmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(xs[mine])
    np.testing.assert_array_equal(np.asarray(gathered), np.broadcast_to(xs, (local,) + xs.shape))
    tiled = minijax.pmap(lambda v: lax.all_gather(v, "i", tiled=True), axis_name="i")(xs[mine])
    np.testing.assert_array_equal(np.asarray(tiled)[0], xs.reshape(-1, 3))

    perm = [(g, (g + 1) % total) for g in range(total)]
    shifted = minijax.pmap(lambda v: lax.ppermute(v, "i", perm), axis_name="i")(xs[mine])
    np.testing.assert_array_equal(np.asarray(shifted), np.roll(xs, 1, axis=0)[mine])

    ys = rows((total * 2, 3), total)
    scattered = minijax.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True),
                             axis_name="i")(ys[mine])
    total_sum = ys[0].copy()
    for g in range(1, total):
        total_sum = total_sum + ys[g]
    np.testing.assert_array_equal(np.asarray(scattered),
                                  total_sum.reshape(total, 2, 3)[mine])

    zs = rows((total, 4), total)  # participant g sends row j to participant j
    swapped = minijax.pmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(zs[mine])
    np.testing.assert_array_equal(np.asarray(swapped), zs.transpose(1, 0, 2)[mine])

    # Data-parallel gradient: the mean over every process's devices of per-device grads.
    w = np.linspace(-1, 1, 3).astype(np.float32)

    def loss(w, x):
        return jnp.mean((x @ w) ** 2)

    def step(w, x):
        return lax.pmean(minijax.grad(loss)(w, x), "i")
    grads = minijax.pmap(step, axis_name="i", in_axes=(None, 0))(w, xs[mine])
    per_device = [2 * xs[g].T @ (xs[g] @ w) / 5 for g in range(total)]
    np.testing.assert_allclose(np.asarray(grads)[0], np.mean(per_device, 0), rtol=1e-4)
    print(f"PMAP OK {me}", flush=True)
    minijax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
