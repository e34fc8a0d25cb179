"""Run under `mpiexec -n 2`: process 1 leaves before an allreduce; process 0 must fail with
CollectiveTimeoutError (naming the collective, the missing process and the timeout)
instead of hanging. Prints `TIMEOUT OK` on process 0, `LEFT` on process 1.
"""

import sys
import time

import numpy as np

import minijax
from minijax.backends.transport import CollectiveTimeoutError, TransportBrokenError
from minijax.experimental import multihost_utils


def main():
    minijax.distributed.initialize()
    minijax.config.update("minijax_collective_timeout", 1.0)
    multihost_utils.sync_global_devices("start")  # both are alive here
    if minijax.process_index() == 1:
        print("LEFT", flush=True)
        return 0  # exits (MPI_Finalize) without taking part in the allreduce
    transport = minijax.backends.transport.current()
    start = time.monotonic()
    try:
        transport.allreduce(np.ones(1 << 16, np.float32))
    except CollectiveTimeoutError as e:
        waited = time.monotonic() - start
        message = str(e)
        assert 1.0 <= waited < 10.0, waited
        for part in ("allreduce(sum) of float32[65536]", "processes [1]", "timeout of 1 s",
                     "on process 0 of 2", "MINIJAX_COLLECTIVE_TIMEOUT"):
            assert part in message, (part, message)
    else:
        raise AssertionError("the allreduce did not time out")
    try:  # the transport is unusable now, and says why at once
        transport.barrier()
    except TransportBrokenError as e:
        assert "allreduce(sum) of float32[65536]" in str(e) and "processes [1]" in str(e), e
    else:
        raise AssertionError("the broken transport accepted another collective")
    print("TIMEOUT OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
