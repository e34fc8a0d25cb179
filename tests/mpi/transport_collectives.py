"""Run under `mpiexec -n P`: every MPI transport collective against a NumPy reference.

Each process rebuilds every process's inputs from a seed, so the reference needs no
communication. Prints `TRANSPORT OK <rank>` when every check passed.
"""

import sys

import ml_dtypes
import numpy as np

from minijax.backends.transport import load


def inputs(rank, shape, dtype):
    rng = np.random.default_rng(1000 + rank)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


def main():
    t = load("mpi", timeout=20.0)
    me, procs = t.process_index, t.process_count
    ufuncs = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
    for shape in [(), (1,), (7,), (5, 3), (1001,), (4, 2, 33)]:
        for dtype in [np.float32, np.float64, np.int32, ml_dtypes.bfloat16]:
            everyone = [inputs(p, shape, dtype) for p in range(procs)]
            for op, ufunc in ufuncs.items():
                got = t.allreduce(everyone[me], op)
                want = everyone[0].copy()
                for v in everyone[1:]:
                    want = ufunc(want, v).astype(dtype)
                assert got.dtype == want.dtype and got.shape == want.shape, (op, shape, dtype)
                # Bitwise: the reduction runs in process order on every process.
                assert got.tobytes() == want.tobytes(), (op, shape, dtype, got, want)
                # ... so every process holds the same bits.
                bits = t.allgather(np.frombuffer(got.tobytes(), np.uint8))
                assert all(bits[p].tobytes() == bits[0].tobytes() for p in range(procs))
            gathered = t.allgather(everyone[me])
            np.testing.assert_array_equal(gathered, np.stack(everyone))
            b = t.broadcast(everyone[me], root=procs - 1)
            np.testing.assert_array_equal(b, everyone[procs - 1])
    # In place: out= is the input itself.
    x = inputs(me, (10, 6), np.float32)
    xs = [inputs(p, (10, 6), np.float32) for p in range(procs)]
    t.allreduce(x, "sum", out=x)
    want = xs[0].copy()
    for v in xs[1:]:
        want = want + v
    assert x.tobytes() == want.tobytes()
    # reduce_scatter: block `me` of the sum.
    xs = [inputs(p, (procs * 3, 4), np.float32) for p in range(procs)]
    got = t.reduce_scatter(xs[me], "sum")
    want = xs[0].copy()
    for v in xs[1:]:
        want = want + v
    assert got.tobytes() == want[me * 3:(me + 1) * 3].tobytes()
    # alltoall: block j goes to process j.
    xs = [inputs(p, (procs, 2, 5), np.int32) for p in range(procs)]
    got = t.alltoall(xs[me])
    np.testing.assert_array_equal(got, np.stack([xs[p][me] for p in range(procs)]))
    # sendrecv around the ring, permute with a process that receives nothing.
    xs = [inputs(p, (3, 3), np.float64) for p in range(procs)]
    got = t.sendrecv(xs[me], dest=(me + 1) % procs, source=(me - 1) % procs)
    np.testing.assert_array_equal(got, xs[(me - 1) % procs])
    pairs = [(p, p + 1) for p in range(procs - 1)]
    got = t.permute(xs[me], pairs)
    np.testing.assert_array_equal(got, xs[me - 1] if me > 0 else np.zeros((3, 3)))
    # Non-contiguous input: copied once, then sent.
    x = inputs(me, (6, 8), np.float32)[:, ::2]
    got = t.allgather(x)
    np.testing.assert_array_equal(got, np.stack([inputs(p, (6, 8), np.float32)[:, ::2]
                                                 for p in range(procs)]))
    assert t.allgather_object({"rank": me}) == [{"rank": p} for p in range(procs)]
    t.barrier()
    print(f"TRANSPORT OK {me}", flush=True)
    t.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
