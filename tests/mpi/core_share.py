"""Run under `mpiexec -n P` without MINIJAX_NUM_THREADS: after distributed.initialize()
each process's thread pool has the machine's cores / P threads (at least one), and the
data-parallel step over the processes gives the same bits in every process and on every
run, equal to one device's jit over the whole batch.

Prints `CORES OK <rank>` when every check passed.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples"))

import data_parallel as dp  # noqa: E402

import minijax  # noqa: E402
from minijax.backends.cpu import thread_pool  # noqa: E402
from minijax.experimental import multihost_utils  # noqa: E402


def main():
    assert not os.environ.get("MINIJAX_NUM_THREADS"), "run without MINIJAX_NUM_THREADS"
    minijax.distributed.initialize()
    me, procs = minijax.process_index(), minijax.process_count()
    cores = len(os.sched_getaffinity(0))
    want = max(1, cores // procs)           # every process of this test runs here
    assert minijax.config.minijax_num_threads == want, (minijax.config.minijax_num_threads,
                                                        want)
    assert thread_pool.get_pool().num_threads == want
    batch = 64 * procs
    x, y = dp.make_data(batch)
    params = dp.init_params()
    share = batch // procs
    step = dp.pmap_step(minijax.local_device_count())
    runs = [step(params, x[me * share:(me + 1) * share], y[me * share:(me + 1) * share])
            for _ in range(2)]
    w1 = [np.asarray(new["w1"]) for new, _ in runs]
    np.testing.assert_array_equal(w1[0], w1[1])
    multihost_utils.assert_equal(w1[0], "w1 differs between processes")
    ref, ref_loss = dp.single_device_step()(params, x, y)
    np.testing.assert_allclose(w1[0], np.asarray(ref["w1"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(runs[0][1]), float(ref_loss), rtol=1e-6)
    print(f"CORES OK {me}", flush=True)
    minijax.distributed.shutdown()


if __name__ == "__main__":
    main()
