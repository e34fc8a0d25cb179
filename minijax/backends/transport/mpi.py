"""The MPI transport (mpi4py): the processes of an `mpiexec -n P` run.

Imported only by `minijax.distributed.initialize()` (mpi4py is an optional extra:
`pip install minijax[mpi]`). Every collective is a set of non-blocking point-to-point
messages (MPI_Isend / MPI_Irecv) on a private duplicate of MPI_COMM_WORLD, posted straight
from and into the arrays' memory (buffer protocol, as bytes: any dtype, ml_dtypes' too),
then polled (MPI_Testall) against the collective's deadline. Point-to-point messages, not
MPI's collectives, because they let a timeout say exactly which processes never took part,
and because they fix the reduction order:

- allreduce = reduce-scatter + allgather: process p receives block p of every other
  process's array, reduces the P contributions of that block in process order, and sends
  the reduced block to everyone; each process sends and receives (P-1)/P of the array
  twice, the bandwidth-optimal amount, and every process gets bit-identical results.
- allgather / alltoall / broadcast / sendrecv / permute move blocks directly between the
  processes that own them.

Each collective's messages carry a tag derived from the collective's sequence number, so a
process that calls a different collective than the others does not receive their data; it
times out instead.
"""

from __future__ import annotations

import os
import pickle
import threading
import time

import numpy as np
from mpi4py import MPI

from minijax.backends.transport.base import (
    CollectiveTimeoutError,
    ProcessTransport,
    TransportBrokenError,
    check_op,
    check_out,
    contiguous,
    reduce_in_order,
)

# How long a collective polls without sleeping (yielding the core between polls) before it
# starts sleeping between polls (seconds), and the longest sleep: short collectives stay
# fast, a long wait for a slow process leaves the cores to the processes that compute.
_SPIN_S = 0.02
_MAX_SLEEP_S = 0.002
_TAG_SPAN = 1 << 20


def _bytes(arr: np.ndarray) -> np.ndarray:
    """The memory of a C-contiguous array as a flat uint8 view (no copy)."""
    assert isinstance(arr, np.ndarray) and arr.flags.c_contiguous, type(arr)
    return arr.reshape(-1).view(np.uint8)


def _bounds(n: int, parts: int) -> list[int]:
    """Start offsets of `parts` near-equal contiguous blocks of n elements (and n)."""
    return [n * p // parts for p in range(parts + 1)]


class MpiTransport(ProcessTransport):
    """Collectives between MPI ranks (process index = rank in MPI_COMM_WORLD)."""

    name = "mpi"

    def __init__(self, comm=None, timeout: float | None = None):
        world = MPI.COMM_WORLD if comm is None else comm
        self.comm = world.Dup()
        super().__init__(self.comm.Get_rank(), self.comm.Get_size(), timeout)
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_process_count = node.Get_size()
        node.Free()
        self._sequence = 0
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._scratch = np.empty(0, np.uint8)

    # ------------------------------------------------------------------ plumbing

    def _next_tag(self, what: str) -> int:
        if self._broken is not None:
            raise TransportBrokenError(
                f"{what}: the MPI transport of process {self.process_index} is unusable "
                f"since an earlier collective failed ({self._broken})")
        self._sequence += 1
        return self._sequence % _TAG_SPAN

    def _scratch_bytes(self, nbytes: int) -> np.ndarray:
        """A reused receive buffer (fresh memory would cost its page faults every call)."""
        if self._scratch.nbytes < nbytes:
            self._scratch = np.empty(nbytes, np.uint8)
        return self._scratch[:nbytes]

    def _exchange(self, tag: int, sends, recvs, what: str) -> None:
        """Post `recvs` and `sends` (lists of (process, uint8 buffer)) and wait for all of
        them until the deadline. Messages between two processes with one tag arrive in the
        order posted."""
        comm = self.comm
        requests, peers = [], []
        for peer, buf in recvs:
            requests.append(comm.Irecv([buf, MPI.BYTE], source=peer, tag=tag))
            peers.append(("from", peer))
        for peer, buf in sends:
            requests.append(comm.Isend([buf, MPI.BYTE], dest=peer, tag=tag))
            peers.append(("to", peer))
        if requests:
            self._wait(requests, peers, what)

    def _wait(self, requests, peers, what: str) -> None:
        timeout = self.timeout
        start = time.monotonic()
        deadline = start + timeout
        sleep = 0.0
        while not MPI.Request.Testall(requests):
            now = time.monotonic()
            if now >= deadline:
                self._fail(requests, peers, what, timeout)
            if now - start > _SPIN_S:
                sleep = min(_MAX_SLEEP_S, max(sleep * 2, 5e-5))
                time.sleep(sleep)
            else:
                os.sched_yield()  # let a process that computes on this core go first

    def _fail(self, requests, peers, what: str, timeout: float):
        pending = [peer for req, peer in zip(requests, peers) if not req.Test()]
        missing = sorted({p for _, p in pending})
        for req, (direction, _) in zip(requests, peers):
            if direction == "from":
                try:
                    req.Cancel()
                except MPI.Exception:  # pragma: no cover - the request completed meanwhile
                    pass
        detail = ", ".join(f"{d} process {p}" for d, p in pending)
        message = (f"{what} on process {self.process_index} of {self.process_count}: "
                   f"processes {missing} did not take part within the timeout of {timeout:g} s "
                   f"(pending messages: {detail}). A process died or called other "
                   "collectives; raise minijax_collective_timeout (MINIJAX_COLLECTIVE_TIMEOUT) "
                   "if it is only slow.")
        self._broken = f"{what} timed out waiting for processes {missing}"
        raise CollectiveTimeoutError(message)

    def _peers(self):
        return [p for p in range(self.process_count) if p != self.process_index]

    def _check_rank(self, p, what: str, name: str):
        if p is not None and not 0 <= p < self.process_count:
            raise ValueError(f"{what}: {name}={p} is not a process of this run "
                             f"(0..{self.process_count - 1})")

    # ------------------------------------------------------------------ collectives

    def allreduce(self, x, op="sum", out=None):
        what = f"allreduce({op})"
        check_op(op, what)
        arr = contiguous(x, what)
        result = check_out(out, arr.shape, arr.dtype, what)
        with self._lock:
            self._allreduce(arr, op, result, what)
        return result

    def _allreduce(self, arr, op, result, what):
        what = f"{what} of {arr.dtype}{list(arr.shape)}"
        me, procs = self.process_index, self.process_count
        flat_in, flat_out = arr.reshape(-1), result.reshape(-1)
        if procs == 1:
            np.copyto(flat_out, flat_in)
            return
        bounds = _bounds(flat_in.size, procs)
        lo, hi = bounds[me], bounds[me + 1]
        size = hi - lo
        scratch = self._scratch_bytes(size * arr.dtype.itemsize * procs).view(arr.dtype)
        scratch = scratch.reshape(procs, size)
        tag = self._next_tag(what)
        mine = flat_in[lo:hi]
        if np.may_share_memory(mine, flat_out):
            # In place: keep this process's block, the reduction overwrites it early.
            mine = scratch[me]
            np.copyto(mine, flat_in[lo:hi])
        parts = [mine if p == me else scratch[p] for p in range(procs)]
        self._exchange(
            tag,
            sends=[(p, _bytes(flat_in[bounds[p]:bounds[p + 1]])) for p in self._peers()],
            recvs=[(p, _bytes(scratch[p])) for p in self._peers()],
            what=what + " (reduce-scatter phase)")
        reduce_in_order(parts, op, flat_out[lo:hi])
        self._exchange(
            tag,
            sends=[(p, _bytes(flat_out[lo:hi])) for p in self._peers()],
            recvs=[(p, _bytes(flat_out[bounds[p]:bounds[p + 1]])) for p in self._peers()],
            what=what + " (allgather phase)")

    def reduce_scatter(self, x, op="sum", out=None):
        what = f"reduce_scatter({op})"
        check_op(op, what)
        arr = contiguous(x, what)
        me, procs = self.process_index, self.process_count
        if arr.ndim == 0 or arr.shape[0] % procs:
            raise ValueError(f"{what}: the leading dimension of {arr.dtype}{list(arr.shape)} "
                             f"must be a multiple of the {procs} processes")
        block = (arr.shape[0] // procs,) + arr.shape[1:]
        result = check_out(out, block, arr.dtype, what)
        with self._lock:
            what = f"{what} of {arr.dtype}{list(arr.shape)}"
            blocks = arr.reshape((procs,) + block)
            scratch = self._scratch_bytes(blocks[0].nbytes * procs).view(arr.dtype)
            scratch = scratch.reshape((procs,) + block)
            self._exchange(self._next_tag(what),
                           sends=[(p, _bytes(blocks[p])) for p in self._peers()],
                           recvs=[(p, _bytes(scratch[p])) for p in self._peers()], what=what)
            if np.may_share_memory(blocks, result):
                np.copyto(scratch[me], blocks[me])
            parts = [scratch[p] if p != me or np.may_share_memory(blocks, result)
                     else blocks[me] for p in range(procs)]
            reduce_in_order(parts, op, result)
        return result

    def allgather(self, x, out=None):
        arr = contiguous(x, "allgather")
        me = self.process_index
        result = check_out(out, (self.process_count,) + arr.shape, arr.dtype, "allgather")
        with self._lock:
            what = f"allgather of {arr.dtype}{list(arr.shape)}"
            tag = self._next_tag(what)
            rows = result.reshape(self.process_count, -1)  # views even for 0-d blocks
            rows[me] = arr.reshape(-1)
            self._exchange(tag, sends=[(p, _bytes(arr)) for p in self._peers()],
                           recvs=[(p, _bytes(rows[p])) for p in self._peers()], what=what)
        return result

    def alltoall(self, x, out=None):
        arr = contiguous(x, "alltoall")
        me, procs = self.process_index, self.process_count
        if arr.ndim == 0 or arr.shape[0] != procs:
            raise ValueError(f"alltoall: x must have a leading dimension of {procs} (one "
                             f"block per process), got {arr.dtype}{list(arr.shape)}")
        result = check_out(out, arr.shape, arr.dtype, "alltoall")
        with self._lock:
            what = f"alltoall of {arr.dtype}{list(arr.shape)}"
            tag = self._next_tag(what)
            send_rows, rows = arr.reshape(procs, -1), result.reshape(procs, -1)
            rows[me] = send_rows[me]
            self._exchange(tag, sends=[(p, _bytes(send_rows[p])) for p in self._peers()],
                           recvs=[(p, _bytes(rows[p])) for p in self._peers()], what=what)
        return result

    def sendrecv(self, x, dest, source, out=None):
        arr = contiguous(x, "sendrecv")
        self._check_rank(dest, "sendrecv", "dest")
        self._check_rank(source, "sendrecv", "source")
        return self._permute(arr, [] if dest is None else [dest], source, out)

    def _permute(self, x, targets, source, out):
        arr = contiguous(x, "permute")
        result = check_out(out, arr.shape, arr.dtype, "permute")
        for p in targets + [source]:
            self._check_rank(p, "permute", "process")
        with self._lock:
            what = f"permute of {arr.dtype}{list(arr.shape)}"
            tag = self._next_tag(what)
            me = self.process_index
            if source is None:
                result[...] = 0
            elif source == me:
                np.copyto(result, arr)
            self._exchange(
                tag, sends=[(t, _bytes(arr)) for t in targets if t != me],
                recvs=[] if source in (None, me) else [(source, _bytes(result))], what=what)
        return result

    def broadcast(self, x, root=0, out=None):
        self._check_rank(root, "broadcast", "root")
        arr = contiguous(x, "broadcast")
        result = check_out(out, arr.shape, arr.dtype, "broadcast")
        with self._lock:
            what = f"broadcast from process {root} of {arr.dtype}{list(arr.shape)}"
            tag = self._next_tag(what)
            if self.process_index == root:
                if result is not arr:
                    np.copyto(result, arr)
                self._exchange(tag, sends=[(p, _bytes(arr)) for p in self._peers()], recvs=[],
                               what=what)
            else:
                self._exchange(tag, sends=[], recvs=[(root, _bytes(result))], what=what)
        return result

    def barrier(self):
        token = np.zeros(1, np.uint8)
        with self._lock:
            tag = self._next_tag("barrier")
            inbox = np.zeros((self.process_count, 1), np.uint8)
            self._exchange(tag, sends=[(p, token) for p in self._peers()],
                           recvs=[(p, inbox[p]) for p in self._peers()], what="barrier")

    def allgather_object(self, obj):
        """Small metadata (pickled): sizes first, then the bytes, both with the deadline."""
        data = np.frombuffer(pickle.dumps(obj), np.uint8)
        sizes = self.allgather(np.array([data.size], np.int64))[:, 0]
        blob = np.zeros((self.process_count, int(sizes.max())), np.uint8)
        blob[self.process_index, :data.size] = data
        gathered = self.allgather(blob[self.process_index])
        return [pickle.loads(gathered[p, :sizes[p]].tobytes())
                for p in range(self.process_count)]

    def exchange_arrays(self, sends, recvs, key, what):
        for p, _ in list(sends) + list(recvs):
            self._check_rank(p, what, "process")
        with self._lock:
            if self._broken is not None:
                self._next_tag(what)  # raises TransportBrokenError
            # Tags above the collectives' span: both kinds can be in flight at once.
            tag = _TAG_SPAN + int(key) % _TAG_SPAN
            self._exchange(tag, sends=[(p, _bytes(contiguous(a, what))) for p, a in sends],
                           recvs=[(p, _bytes(a)) for p, a in recvs], what=what)

    def shutdown(self):
        if self.comm is not None and self._broken is None:
            self.comm.Free()
        self.comm = None
        self._broken = self._broken or "the transport was shut down"


def create_transport(timeout: float | None = None) -> MpiTransport:
    """The MPI transport over MPI_COMM_WORLD (initializes MPI if needed)."""
    return MpiTransport(timeout=timeout)
