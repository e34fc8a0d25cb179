"""Transports between the processes of a multi-process run, loaded lazily by name.

`base.py` is the backend-neutral interface (`ProcessTransport`: allreduce, allgather,
reduce_scatter, alltoall, sendrecv/permute, broadcast, barrier, each with a deadline);
`mpi.py` implements it on mpi4py and is imported only by `load("mpi")` (from
`minijax.distributed.initialize()`), so `import minijax` never imports mpi4py.

The run's transport is process-wide state: `current()` is the transport installed by
`minijax.distributed.initialize()`, or a `SingleProcessTransport` when there is none.
Backends read `process_index()` when they list their devices (global device ids).
"""

from __future__ import annotations

import importlib
import threading

from minijax.backends.transport.base import (
    CollectiveTimeoutError,
    ProcessTransport,
    SingleProcessTransport,
    TransportBrokenError,
)

__all__ = ["CPU_IDS_PER_PROCESS", "CollectiveTimeoutError", "ProcessTransport",
           "SingleProcessTransport", "cpu_device_id", "device_placement", "placement_read",
           "TransportBrokenError", "TRANSPORT_MODULES", "current", "install", "installed", "load",
           "process_count", "process_index", "uninstall"]

#: Known transports and the module implementing each (a `create_transport(timeout)`).
TRANSPORT_MODULES = {"mpi": "minijax.backends.transport.mpi"}

_lock = threading.Lock()
_installed: ProcessTransport | None = None
_single = SingleProcessTransport()


def load(name: str, timeout: float | None = None) -> ProcessTransport:
    """Create the transport `name` (importing its module, e.g. mpi4py, only now)."""
    try:
        module_name = TRANSPORT_MODULES[name]
    except KeyError:
        raise ValueError(f"unknown process transport {name!r}; known: "
                         f"{sorted(TRANSPORT_MODULES)}") from None
    return importlib.import_module(module_name).create_transport(timeout)


def install(transport: ProcessTransport) -> None:
    """Make `transport` the run's transport (distributed.initialize)."""
    global _installed
    with _lock:
        _installed = transport


def uninstall() -> ProcessTransport | None:
    """Remove the run's transport (distributed.shutdown); returns it."""
    global _installed
    with _lock:
        transport, _installed = _installed, None
    return transport


def installed() -> ProcessTransport | None:
    """The transport installed by distributed.initialize(), or None."""
    return _installed


def current() -> ProcessTransport:
    """The run's transport: the installed one, else the single-process one."""
    return _installed or _single


def process_index() -> int:
    """This process's index in the run (0 without distributed.initialize)."""
    return current().process_index


def process_count() -> int:
    """The number of processes in the run (1 without distributed.initialize)."""
    return current().process_count


# ---------------------------------------------------------------------- device placement

#: JAX's CPU device ids in a multi-process run: process index << 11 | local index (what
#: JAX 0.10.2 numbers them: 2 processes of 3 CPU devices are ids 0, 1, 2, 2048, 2049, 2050).
CPU_IDS_PER_PROCESS = 1 << 11
_placement_read = False


def cpu_device_id(process: int, local: int) -> int:
    """The global id of CPU device `local` of process `process` (JAX's numbering)."""
    return process * CPU_IDS_PER_PROCESS + local


def device_placement() -> int:
    """The process index a backend gives the devices it lists. Reading it fixes it: a
    multi-process distributed.initialize() must come before any device is listed."""
    global _placement_read
    _placement_read = True
    return process_index()


def placement_read() -> bool:
    """Whether a backend listed its devices already (see device_placement)."""
    return _placement_read
