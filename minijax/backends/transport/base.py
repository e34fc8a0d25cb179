"""The interface every transport between processes implements (backend-neutral).

A `ProcessTransport` connects the `process_count` processes of one multi-process run (one
per MPI rank under `mpiexec`). Its collectives take C-contiguous NumPy arrays and move their
memory directly (buffer protocol, no serialization); every process calls the same
collectives in the same order, as with MPI. Each collective has a deadline
(`minijax_collective_timeout`, MINIJAX_COLLECTIVE_TIMEOUT): a process that does not take
part in time (it died, or took another path through the program) makes the others raise
`CollectiveTimeoutError` naming the collective, the processes missing and the timeout,
instead of waiting forever. After a timeout the transport is broken: later collectives
raise `TransportBrokenError` at once (messages of the failed one may still be in flight).

Reductions are deterministic: every element is reduced by one process, combining the
contributions in process order (0, 1, ..., P-1), and the result is sent to the others, so
every process and every run gets the same bits (MPI's own allreduce leaves the order to
the implementation).

`SingleProcessTransport` is the transport of a run with one process (no MPI needed).
"""

from __future__ import annotations

import numpy as np

from minijax.backends.spmd import CollectiveTimeoutError
from minijax.config import config

#: The reductions every transport implements, with the NumPy ufunc that combines two
#: contributions.
REDUCTIONS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


__all__ = ["CollectiveTimeoutError", "ProcessTransport", "REDUCTIONS", "SingleProcessTransport",
           "TransportBrokenError", "default_timeout"]


class TransportBrokenError(RuntimeError):
    """A collective failed earlier on this transport; its state is unknown."""


def default_timeout() -> float:
    """Seconds a collective waits for the other processes (`minijax_collective_timeout`)."""
    return float(config.read("minijax_collective_timeout"))


def contiguous(x, what: str) -> np.ndarray:
    """`x` as a C-contiguous NumPy array (the array itself when it already is one)."""
    arr = np.asarray(x)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def check_out(out, shape: tuple, dtype, what: str) -> np.ndarray:
    """The output buffer of a collective: `out` checked (shape, dtype, contiguous,
    writeable), or a new array."""
    if out is None:
        return np.empty(shape, dtype)
    if not isinstance(out, np.ndarray) or out.shape != tuple(shape) or out.dtype != dtype \
            or not out.flags.c_contiguous or not out.flags.writeable:
        got = (f"{out.dtype}{list(out.shape)}" if isinstance(out, np.ndarray)
               else type(out).__name__)
        raise ValueError(f"{what}: out= must be a writeable C-contiguous "
                         f"{np.dtype(dtype)}{list(shape)} array, got {got}")
    return out


def check_op(op: str, what: str):
    try:
        return REDUCTIONS[op]
    except KeyError:
        raise ValueError(f"{what}: unknown reduction op={op!r}; use one of "
                         f"{sorted(REDUCTIONS)}") from None


def reduce_in_order(parts, op: str, out: np.ndarray) -> np.ndarray:
    """out = parts[0] op parts[1] op ... op parts[-1], left to right (the fixed order that
    makes reductions bit-identical everywhere)."""
    ufunc = REDUCTIONS[op]
    if len(parts) == 1:
        np.copyto(out, parts[0])
        return out
    ufunc(parts[0], parts[1], out=out)
    for part in parts[2:]:
        ufunc(out, part, out=out)
    return out


class ProcessTransport:
    """Collectives between the processes of one run. Arrays are NumPy arrays; shapes and
    dtypes must agree on every process (as MPI requires). `out=` receives the result in
    place when given (a C-contiguous array of the result's shape and dtype)."""

    #: Name of the implementation ("mpi", "single").
    name = ""
    #: How many processes of the run share this process's machine (node).
    local_process_count = 1

    def __init__(self, process_index: int, process_count: int, timeout: float | None = None):
        self.process_index = process_index
        self.process_count = process_count
        self._timeout = timeout

    @property
    def timeout(self) -> float:
        """Seconds each collective waits (the config option unless given explicitly)."""
        return default_timeout() if self._timeout is None else float(self._timeout)

    def set_timeout(self, seconds: float | None) -> None:
        """Wait `seconds` in each collective from now on (None: the config option)."""
        self._timeout = seconds

    def allreduce(self, x, op: str = "sum", out=None) -> np.ndarray:
        """The elementwise reduction (sum, prod, max, min) of every process's `x`, in process
        order; every process gets the same bits."""
        raise NotImplementedError

    def allgather(self, x, out=None) -> np.ndarray:
        """Every process's `x`, stacked: shape (process_count, *x.shape)."""
        raise NotImplementedError

    def reduce_scatter(self, x, op: str = "sum", out=None) -> np.ndarray:
        """Process p gets block p (of process_count equal blocks along axis 0) of the
        reduction of every process's `x`."""
        raise NotImplementedError

    def alltoall(self, x, out=None) -> np.ndarray:
        """x has shape (process_count, ...): block j goes to process j; result block j came
        from process j."""
        raise NotImplementedError

    def sendrecv(self, x, dest: int | None, source: int | None, out=None) -> np.ndarray:
        """Send `x` to process `dest` and receive an array like `x` from `source` (either
        may be None: nothing sent / nothing received, the result is then zeros)."""
        raise NotImplementedError

    def permute(self, x, pairs, out=None) -> np.ndarray:
        """XLA's collective-permute between processes: `pairs` lists (source, target)
        processes; each process sends `x` to its targets and gets the array of its source,
        or zeros when it has none."""
        sources = [s for s, t in pairs if t == self.process_index]
        targets = [t for s, t in pairs if s == self.process_index]
        if len(sources) > 1:
            raise ValueError(f"permute: process {self.process_index} is the target of "
                             f"several pairs in {list(pairs)}")
        return self._permute(x, targets, sources[0] if sources else None, out)

    def _permute(self, x, targets, source, out):
        raise NotImplementedError

    def broadcast(self, x, root: int = 0, out=None) -> np.ndarray:
        """Process `root`'s `x` on every process (x gives the shape and dtype elsewhere)."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Return once every process has called barrier (or raise after the timeout)."""
        raise NotImplementedError

    def allgather_object(self, obj) -> list:
        """Every process's small picklable `obj`, in process order (start-up metadata)."""
        raise NotImplementedError

    def exchange_arrays(self, sends, recvs, key: int, what: str) -> None:
        """Point-to-point, for the multi-device runtime: send each (process, array) of
        `sends` and fill each (process, array) of `recvs`, matched per pair of processes in
        list order. `key` (the same on both sides, e.g. the collective's sequence number)
        keeps concurrent exchanges apart. Waits until the deadline."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """Release the transport's resources (the MPI communicator)."""


class SingleProcessTransport(ProcessTransport):
    """The transport of a run with one process: every collective is a local copy."""

    name = "single"

    def __init__(self, timeout: float | None = None):
        super().__init__(0, 1, timeout)

    def _copy(self, x, out, what):
        arr = contiguous(x, what)
        result = check_out(out, arr.shape, arr.dtype, what)
        np.copyto(result, arr)
        return result

    def allreduce(self, x, op="sum", out=None):
        check_op(op, "allreduce")
        return self._copy(x, out, "allreduce")

    def allgather(self, x, out=None):
        arr = contiguous(x, "allgather")
        result = check_out(out, (1,) + arr.shape, arr.dtype, "allgather")
        result[0] = arr
        return result

    def reduce_scatter(self, x, op="sum", out=None):
        check_op(op, "reduce_scatter")
        return self._copy(x, out, "reduce_scatter")

    def alltoall(self, x, out=None):
        return self._copy(x, out, "alltoall")

    def sendrecv(self, x, dest, source, out=None):
        for p in (dest, source):
            if p not in (None, 0):
                raise ValueError(f"sendrecv: process {p} does not exist (1 process)")
        arr = contiguous(x, "sendrecv")
        if source is None:
            result = check_out(out, arr.shape, arr.dtype, "sendrecv")
            result[...] = 0
            return result
        return self._copy(arr, out, "sendrecv")

    def _permute(self, x, targets, source, out):
        return self.sendrecv(x, targets[0] if targets else None, source, out)

    def broadcast(self, x, root=0, out=None):
        if root != 0:
            raise ValueError(f"broadcast: root process {root} does not exist (1 process)")
        return self._copy(x, out, "broadcast")

    def barrier(self):
        return None

    def allgather_object(self, obj):
        return [obj]

    def exchange_arrays(self, sends, recvs, key, what):
        if sends or recvs:
            raise ValueError(f"{what}: a run of one process has no other process to exchange "
                             "arrays with")
