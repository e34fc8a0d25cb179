"""Many processes: `minijax.distributed.initialize()` under `mpiexec` (JAX's API).

Run one Python process per MPI rank, e.g. `mpiexec -n 2 python train.py`, and call
`minijax.distributed.initialize()` first, before anything lists devices or computes. Rank
and size come from MPI (mpi4py, the optional extra `pip install minijax[mpi]`); JAX's
arguments are accepted for compatibility: `num_processes` / `process_id`, when given, must
agree with MPI; `coordinator_address` and the timeouts of JAX's coordination service have
nothing to configure (MPI's launcher connects the processes), except
`initialization_timeout`, the deadline of the start-up exchange.

After it, `minijax.devices()` lists every process's devices (ids are global, JAX's CPU
numbering `process_index << 11 | local index`; each device has its `process_index`),
`minijax.local_devices()` this process's, and `process_index()` / `process_count()` say
where this process stands. The processes' collectives go through the transport installed
here (minijax.backends.transport; minijax.experimental.multihost_utils uses it).

Without a launcher (no MPI environment), `initialize()` with no arguments or with
`num_processes=1` sets up a run of one process, without importing mpi4py.
"""

from __future__ import annotations

import importlib.util
import os

from minijax.backends import get_backend, transport
from minijax.backends.base import Device
from minijax.config import config, started_by_mpi_launcher

__all__ = ["global_devices", "initialize", "is_initialized", "shutdown"]

_CLUSTER_METHODS = (None, "mpi4py", "deactivate")

# Every process's devices, per backend name (set by initialize).
_global_devices: dict[str, list] = {}


def _mpi_transport(timeout: float):
    if importlib.util.find_spec("mpi4py") is None:
        raise ImportError(
            "distributed.initialize(): this process runs under an MPI launcher but mpi4py is "
            "not installed; install the MPI extra (pip install 'minijax[mpi]', which brings "
            "mpi4py and the MPICH wheels) or run without mpiexec")
    return transport.load("mpi", timeout=timeout)


def _check_agrees(name: str, given, actual: int, hint: str):
    if given is not None and int(given) != actual:
        raise ValueError(f"distributed.initialize(): {name}={given} but {hint}")


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Join the multi-process run (JAX's signature; see the module docstring).

    Under an MPI launcher (mpiexec / mpirun / srun with PMI) rank and size come from MPI
    and explicit `num_processes` / `process_id` must agree with them. Without one, only a
    run of one process can be set up. Must be called once, before devices are listed (in a
    run of several processes). Raises RuntimeError when called twice (as JAX does)."""
    if transport.installed() is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    if cluster_detection_method not in _CLUSTER_METHODS:
        raise ValueError(f"distributed.initialize(): cluster_detection_method="
                         f"{cluster_detection_method!r} is not supported; minijax detects "
                         "MPI launchers (use None or 'mpi4py')")
    if started_by_mpi_launcher() or cluster_detection_method == "mpi4py":
        run = _mpi_transport(float(initialization_timeout))
        hint = (f"MPI runs {run.process_count} processes (mpiexec -n {run.process_count}) "
                f"and this one is rank {run.process_index}")
    else:
        run = transport.SingleProcessTransport(timeout=float(initialization_timeout))
        hint = ("this process was not started by an MPI launcher, so it is a run of one "
                "process; start every process with `mpiexec -n N python ...` (minijax "
                "connects processes through MPI; coordinator_address is not used)")
    try:
        _check_agrees("num_processes", num_processes, run.process_count, hint)
        _check_agrees("process_id", process_id, run.process_index, hint)
        if run.process_count > 1 and transport.placement_read():
            raise RuntimeError(
                "distributed.initialize() must be called before any minijax calls that "
                "initialize a backend. This includes any computation, but also calls to "
                "minijax.devices, minijax.device_put, and others.")
        transport.install(run)
        _share_cores(run)
        _exchange_devices(run, local_device_ids)
    except BaseException:
        transport.uninstall()
        run.shutdown()
        raise
    run.set_timeout(None)  # collectives from now on: minijax_collective_timeout


def _share_cores(run) -> None:
    """Processes on one machine split its cores: without MINIJAX_NUM_THREADS, each one's
    thread pool gets cores / (processes on this machine) threads (at least one), as the
    devices of one process each get their share; otherwise `mpiexec -n 2` on 2 cores would
    run 4 threads that wait on each other."""
    if run.local_process_count <= 1 or config._values["minijax_num_threads"]:
        return
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    config.update("minijax_num_threads", max(1, cores // run.local_process_count))


def _exchange_devices(run, local_device_ids) -> None:
    backend = get_backend()
    local = list(backend.devices())
    if local_device_ids is not None:
        ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
        bad = [i for i in ids if not 0 <= int(i) < len(local)]
        if bad:
            raise ValueError(f"distributed.initialize(): local_device_ids {bad} name no device "
                             f"of this process (it has {len(local)} {backend.platform} "
                             "devices)")
    if run.process_count > 1 and backend.platform != "cpu":
        raise NotImplementedError(
            f"distributed.initialize(): runs of several processes support the CPU backend "
            f"only (the default backend here is {backend.name!r}); set MINIJAX_BACKEND=cpu")
    described = [(d.platform, d.id, d.device_kind, d.backend) for d in local]
    everyone = run.allgather_object(described)
    devices = []
    for process, descriptions in enumerate(everyone):
        if process == run.process_index:
            devices.extend(local)
            continue
        for platform, device_id, kind, backend_name in descriptions:
            if backend_name != backend.name:
                raise RuntimeError(
                    f"distributed.initialize(): process {process} runs the {backend_name!r} "
                    f"backend but process {run.process_index} runs {backend.name!r}; every "
                    "process must use the same backend (MINIJAX_BACKEND)")
            devices.append(Device(platform, device_id, kind, backend_name, process))
    _global_devices[backend.name] = devices


def is_initialized() -> bool:
    """Whether initialize() has run (and shutdown() has not)."""
    return transport.installed() is not None


def shutdown() -> None:
    """Leave the multi-process run: release the transport (MPI communicator). A no-op
    when initialize() was not called, as in JAX."""
    run = transport.uninstall()
    _global_devices.clear()
    if run is not None:
        run.shutdown()


def global_devices(backend_name: str) -> list | None:
    """Every process's devices of backend `backend_name` (None outside a run set up by
    initialize(), where every device is local)."""
    return _global_devices.get(backend_name)
