"""Allreduce of 64 MB across MPI processes against the machine's copy bandwidth.

Run: `mpiexec -n 2 python benchmarks/mpi_allreduce.py [--mb 64] [--repeats 10]`.
Prints, on process 0, the best allreduce time (minijax's MPI transport, float32 sum,
deterministic order) and the best time of a NumPy copy of the same buffer measured in
the same run, as bandwidths (buffer bytes / time), and their ratio. The issue's target is
a ratio >= 0.5. MPI's own MPI_Allreduce (order left to the implementation) is timed too,
for reference.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from mpi4py import MPI

from minijax.backends.transport import load


def best_time(fn, repeats: int, sync=None) -> float:
    best = float("inf")
    for _ in range(repeats):
        if sync is not None:
            sync()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=64.0, help="buffer size in MB")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    transport = load("mpi", timeout=120.0)
    me, procs = transport.process_index, transport.process_count
    n = int(args.mb * 2**20) // 4
    x = np.random.default_rng(me).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    copy_dst = np.empty_like(x)
    transport.allreduce(x, out=out)  # warm: scratch buffers, page faults, connections
    np.copyto(copy_dst, x)

    allreduce = best_time(lambda: transport.allreduce(x, out=out), args.repeats,
                          transport.barrier)
    copy = best_time(lambda: np.copyto(copy_dst, x), args.repeats, transport.barrier)
    comm = transport.comm
    mpi_native = best_time(lambda: comm.Allreduce(x, out, MPI.SUM), args.repeats, comm.Barrier)
    if me == 0:
        nbytes = x.nbytes
        print(f"allreduce of {nbytes / 2**20:.0f} MB (float32 sum) over {procs} MPI processes")
        print(f"  minijax transport   {allreduce * 1e3:8.2f} ms  "
              f"{nbytes / allreduce / 1e9:6.2f} GB/s")
        print(f"  MPI_Allreduce       {mpi_native * 1e3:8.2f} ms  "
              f"{nbytes / mpi_native / 1e9:6.2f} GB/s")
        print(f"  NumPy copy          {copy * 1e3:8.2f} ms  {nbytes / copy / 1e9:6.2f} GB/s")
        print(f"ratio allreduce / copy bandwidth: {copy / allreduce:.2f} (target >= 0.5)")
    transport.shutdown()


if __name__ == "__main__":
    main()
