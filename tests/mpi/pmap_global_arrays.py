"""Run under `mpiexec -n P` with MINIJAX_NUM_CPU_DEVICES=L: global Arrays (spread over
every process's devices) given to pmap and closed over by jit / shard_map / pmap, as JAX
0.10.2's multi-process pmap treats them. Values are checked against NumPy. Prints
`PMAP GLOBAL OK <rank>`.

- pmap of a global Array split along its mapped axis over every process's devices in
  process order (the layout pmap gives): each process's devices take their own shards;
  the result is host-local (this process's rows, over its devices), as JAX's;
- another layout raises JAX's ValueError ("does not match the sharding on the respective
  arg"); a replicated one may be an unmapped (in_axes=None) argument;
- closing over a global Array that is not replicated raises JAX's RuntimeError ("Closing
  over jax.Array that spans non-addressable ..."); a replicated one works;
- pmap under jit maps over this process's devices (as JAX's under a trace).
"""

import functools
import sys

import numpy as np
from world import join

import minijax
from minijax import lax
from minijax.sharding import NamedSharding
from minijax.sharding import PartitionSpec as P


def expect_error(kind, texts, fn, *args):
    try:
        fn(*args)
    except kind as e:
        for text in texts:
            assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"{fn} did not raise {kind.__name__}")


def local_rows(out, want):
    """`out` is host-local: this process's rows of `want`, one per local device."""
    assert out.is_fully_addressable, out.sharding
    assert [s.device for s in out.addressable_shards] == minijax.local_devices()
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)


def main():
    me, procs, n, total = join()
    mine = slice(me * n, (me + 1) * n)
    mesh = minijax.make_mesh((total,), ("x",))
    full = np.arange(total * 3, dtype=np.float32).reshape(total, 3)
    g = minijax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), full[mine])
    rep = minijax.make_array_from_callback(full.shape, NamedSharding(mesh, P()),
                                           lambda i: full[i])
    assert not g.is_fully_addressable

    # pmap of a global Array laid out as pmap splits it: its shards, in place.
    local_rows(minijax.pmap(lambda v: v * 2)(g), full[mine] * 2)
    summed = minijax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(g)
    local_rows(summed, np.broadcast_to(full.sum(0), (n, 3)))
    # Mixed with host-local data (this process's rows), and fed back.
    local_rows(minijax.pmap(lambda v, w: v * w)(g, full[mine]), full[mine] ** 2)
    again = minijax.pmap(lambda v: v + 1)(minijax.pmap(lambda v: v * 2)(g))
    local_rows(again, full[mine] * 2 + 1)
    # The same layout over a 2-d mesh (process, device) is the same split.
    grid = minijax.make_mesh((procs, n), ("p", "d"))
    g2 = minijax.make_array_from_callback(full.shape, NamedSharding(grid, P(("p", "d"))),
                                          lambda i: full[i])
    local_rows(minijax.pmap(lambda v: v - 1)(g2), full[mine] - 1)
    # Replicated: an unmapped argument.
    local_rows(minijax.pmap(lambda v, r: v + r[0], in_axes=(0, None))(full[mine], rep),
               full[mine] + full[0])

    # Another layout: JAX's ValueError.
    mismatch = ["pmap: argument", "does not match the sharding on the respective arg",
                f"float32[{total},3]"]
    expect_error(ValueError, mismatch, minijax.pmap(lambda v: v * 2), rep)
    if n > 1:  # rows split over the processes only: several rows per device
        by_process = minijax.make_array_from_callback(
            full.shape, NamedSharding(grid, P("p")), lambda i: full[i])
        expect_error(ValueError, mismatch, minijax.pmap(lambda v: v * 2), by_process)
    expect_error(ValueError, ["does not match"], minijax.pmap(lambda v, r: v + r,
                                                              in_axes=(0, None)),
                 full[mine], g)

    # Closing over a global Array: JAX's RuntimeError unless it is replicated.
    closing = ["Closing over jax.Array that spans non-addressable", f"float32[{total},3]"]
    expect_error(RuntimeError, closing + ["jit"],
                 minijax.jit(lambda v: v + g), g)
    expect_error(RuntimeError, closing, minijax.jit(lambda v: v + g), full)
    shmap = functools.partial(minijax.shard_map, mesh=mesh, in_specs=P("x"),
                              out_specs=P("x"))
    expect_error(RuntimeError, closing, shmap(lambda b: b + g[0]), g)
    expect_error(RuntimeError, closing, minijax.pmap(lambda v: v + g[0]), full[mine])
    out = minijax.jit(lambda v: v + rep)(g)
    for s in out.addressable_shards:
        np.testing.assert_allclose(np.asarray(s.data), 2 * full[s.index])
    out = shmap(lambda b: b + rep[0])(g)
    for s in out.addressable_shards:
        np.testing.assert_allclose(np.asarray(s.data), full[s.index] + full[0])

    # pmap under jit: this process's devices (a global mapped size is refused).
    local_rows(minijax.jit(minijax.pmap(lambda v: v * 3))(full[mine]), full[mine] * 3)
    expect_error(ValueError, ["this process's", f"size {total}"],
                 minijax.jit(minijax.pmap(lambda v: v * 2)), g)

    print(f"PMAP GLOBAL OK {me}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
