"""Global configuration, with JAX's names: `minijax.config.update("jax_enable_x64", True)`.

This is the one place where settings are read from the environment: each option below
takes its initial value from its environment variable when the process starts, and
`config.update(name, value)` changes it at run time (every reader asks `config`, and
options whose change needs work elsewhere notify listeners registered with `on_change`).

option (environment variable)          meaning
jax_enable_x64 (JAX_ENABLE_X64)        64-bit default dtypes
jax_disable_jit (JAX_DISABLE_JIT)      run jitted functions op by op
jax_log_compiles (JAX_LOG_COMPILES)    log every compile
jax_explain_cache_misses (JAX_EXPLAIN_CACHE_MISSES)  log each compile with the miss reason
jax_debug_nans, jax_debug_infs (JAX_DEBUG_NANS/INFS)  raise at the first NaN/Inf (float_checks.py)
jax_platforms (JAX_PLATFORMS)          backend preference list ("cpu", "cuda")
jax_threefry_partitionable             JAX's random-bits scheme (default True)
minijax_debug (MINIJAX_DEBUG)          1 compiles, 2 kernel timings, 3 HLO per pass, 4 IR/PTX
minijax_backend (MINIJAX_BACKEND)      default backend: cpu, cuda, interpreter
minijax_cache_dir (MINIJAX_CACHE_DIR)  persistent compile cache directory ("" = none)
minijax_flags (MINIJAX_FLAGS)          dump flags: --dump_to=DIR [--dump_pass_re=RE] ...
minijax_num_threads (MINIJAX_NUM_THREADS)  CPU thread pool size (0: every usable core)
jax_num_cpu_devices (MINIJAX_NUM_CPU_DEVICES, JAX_NUM_CPU_DEVICES, or XLA_FLAGS'
    --xla_force_host_platform_device_count=N)  number of CPU devices (default 1); fixed
                                       once the CPU backend lists its devices
minijax_collective_timeout (MINIJAX_COLLECTIVE_TIMEOUT)  seconds a device waits for the
                                       others at a collective before failing (default 300)
minijax_dot_blas (MINIJAX_DOT_BLAS)    CPU dots through BLAS (False: np.matmul)
minijax_dot_split (MINIJAX_DOT_SPLIT)  split large gemms over minijax's pool (False: BLAS's)
minijax_dot_autotune (MINIJAX_DOT_AUTOTUNE)  choose each gemm shape's split from timings of
                                       its first calls (default False: fixed thresholds,
                                       the same bits on every run; gemm_tuning.py)
minijax_native_loops (MINIJAX_NATIVE_LOOPS)  CPU while loops of small kernels and gemms as
                                       one native loop (False: a Python loop per iteration)
minijax_host_cache_bytes (MINIJAX_HOST_CACHE_BYTES)  cap on idle host memory the CPU backend
                                       keeps mapped for kernel outputs (0: no cache;
                                       default 256 MiB; backends/cpu/memory.py)
jax_traceback_filtering (MINIJAX_TRACEBACK_FILTERING or JAX_TRACEBACK_FILTERING)  "auto"
                                       hides minijax's frames in tracebacks, "off" shows them

Options that change generated code (minijax_dot_blas, minijax_dot_split,
minijax_dot_autotune, minijax_native_loops) apply to programs compiled after the change:
updating them empties the compile caches.
"""

from __future__ import annotations

import os
import re


def _env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _env_int(name: str, default: int = 0) -> int:
    value = (os.environ.get(name) or "").strip()
    try:
        return int(value) if value else default
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _env_num_cpu_devices() -> int:
    """MINIJAX_NUM_CPU_DEVICES, else JAX_NUM_CPU_DEVICES, else XLA_FLAGS' forced host
    device count (JAX's spelling), else 1."""
    for name in ("MINIJAX_NUM_CPU_DEVICES", "JAX_NUM_CPU_DEVICES"):
        if (os.environ.get(name) or "").strip():
            return max(1, _env_int(name))
    match = re.search(r"--xla_force_host_platform_device_count=(\d+)",
                      os.environ.get("XLA_FLAGS", ""))
    return max(1, int(match.group(1))) if match else 1


def _bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _int(value) -> int:
    return int(value or 0)


def _str(value) -> str:
    return "" if value is None else str(value)


#: Converters applied by `update` (other options keep the value as given).
_TYPES = {
    "jax_enable_x64": _bool, "jax_disable_jit": _bool, "jax_log_compiles": _bool,
    "jax_explain_cache_misses": _bool, "jax_debug_nans": _bool, "jax_debug_infs": _bool,
    "jax_platforms": _str,
    "jax_threefry_partitionable": _bool, "minijax_debug": _int, "minijax_backend": _str,
    "minijax_cache_dir": _str, "minijax_flags": _str, "minijax_num_threads": _int,
    "minijax_dot_blas": _bool, "minijax_dot_split": _bool, "minijax_dot_autotune": _bool,
    "minijax_host_cache_bytes": _int, "minijax_native_loops": _bool,
    "minijax_collective_timeout": float,
    "jax_num_cpu_devices": lambda v: max(1, int(v)) if int(v) > 0 else 1,
    "jax_traceback_filtering": lambda v: (str(v).strip().lower() or "auto"),
}


class Config:
    """A small settings object. Read attributes directly (`config.jax_enable_x64`)."""

    def __init__(self):
        self._values = {
            "jax_enable_x64": _env_bool("JAX_ENABLE_X64"),
            "jax_disable_jit": _env_bool("JAX_DISABLE_JIT"),
            "jax_log_compiles": _env_bool("JAX_LOG_COMPILES"),
            "jax_explain_cache_misses": _env_bool("JAX_EXPLAIN_CACHE_MISSES"),
            "jax_debug_nans": _env_bool("JAX_DEBUG_NANS"),
            "jax_debug_infs": _env_bool("JAX_DEBUG_INFS"),
            "jax_platforms": os.environ.get("JAX_PLATFORMS", ""),
            "jax_threefry_partitionable": True,
            "minijax_debug": _env_int("MINIJAX_DEBUG"),
            "minijax_backend": os.environ.get("MINIJAX_BACKEND", ""),
            "minijax_cache_dir": os.environ.get("MINIJAX_CACHE_DIR", ""),
            "minijax_flags": os.environ.get("MINIJAX_FLAGS", ""),
            "minijax_num_threads": _env_int("MINIJAX_NUM_THREADS"),
            "minijax_dot_blas": _env_bool("MINIJAX_DOT_BLAS", True),
            "minijax_dot_split": _env_bool("MINIJAX_DOT_SPLIT", True),
            "minijax_dot_autotune": _env_bool("MINIJAX_DOT_AUTOTUNE", False),
            "minijax_native_loops": _env_bool("MINIJAX_NATIVE_LOOPS", True),
            "minijax_host_cache_bytes": _env_int("MINIJAX_HOST_CACHE_BYTES", 256 << 20),
            "jax_num_cpu_devices": _env_num_cpu_devices(),
            "minijax_collective_timeout": float(
                os.environ.get("MINIJAX_COLLECTIVE_TIMEOUT", "").strip() or 300.0),
            # "off" shows minijax's internal frames in tracebacks ("auto" hides them).
            "jax_traceback_filtering": (
                os.environ.get("MINIJAX_TRACEBACK_FILTERING")
                or os.environ.get("JAX_TRACEBACK_FILTERING", "auto")).strip().lower() or "auto",
        }
        self._listeners: dict[str, list] = {}
        # Options that can no longer change (name -> why), see `freeze`.
        self._frozen: dict[str, str] = {}

    def update(self, name: str, value) -> None:
        """Set option `name` (JAX's spelling) to `value`."""
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}")
        if value and name in _NOT_SUPPORTED:
            raise NotImplementedError(f"minijax does not support {name!r} yet: "
                                      f"{_NOT_SUPPORTED[name]}")
        convert = _TYPES.get(name)
        if convert is not None:
            value = convert(value)
        if name in self._frozen and value != self._values[name]:
            raise RuntimeError(self._frozen[name])
        self._values[name] = value
        for listener in self._listeners.get(name, ()):
            listener(value)

    def on_change(self, name: str, listener) -> None:
        """Call `listener(value)` whenever option `name` changes."""
        self._listeners.setdefault(name, []).append(listener)

    def freeze(self, name: str, why: str) -> None:
        """From now on, `update(name, other_value)` raises RuntimeError(why)."""
        self._frozen[name] = why

    def read(self, name: str):
        return self._values[name]

    def __getattr__(self, name: str):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def values(self) -> dict:
        """A copy of all current settings (written into dumps for reproduction)."""
        return dict(self._values)

    def config_with_absl(self, flag_values=None) -> None:
        """Define an absl flag per option (same name, e.g. `--jax_enable_x64`), as JAX's
        config_with_absl; flags given on the command line are applied once absl has parsed
        them (`absl.app.run` calls this back). `flag_values` defaults to absl.flags.FLAGS."""
        try:
            from absl import app, flags  # optional dependency, only needed here
        except ImportError as err:
            raise ImportError("config_with_absl needs absl-py (pip install absl-py)") from err
        fv = flags.FLAGS if flag_values is None else flag_values
        for name, value in self._values.items():
            if name in fv:
                continue
            help_text = f"minijax option {name}"
            if _TYPES.get(name) is _bool:
                flags.DEFINE_bool(name, bool(value), help_text, flag_values=fv)
            elif _TYPES.get(name) is _int:
                flags.DEFINE_integer(name, int(value), help_text, flag_values=fv)
            else:
                flags.DEFINE_string(name, str(value), help_text, flag_values=fv)

        def apply():
            for name in self._values:
                if name in fv and fv[name].present:
                    self.update(name, fv[name].value)
        if fv.is_parsed():
            apply()
        else:
            app.call_after_init(apply)


#: Options that exist in JAX but are not implemented: setting one raises rather than being
#: silently ignored.
_NOT_SUPPORTED: dict[str, str] = {}

config = Config()


def debug_level() -> int:
    """MINIJAX_DEBUG level: 1 compiles, 2 kernels and timings, 3 HLO per pass, 4 LLVM/PTX."""
    return config._values["minijax_debug"]


# Environment variables MPI launchers set in the processes they start (MPICH's Hydra, Open
# MPI, PMIx, PMI under Slurm).
_MPI_LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                           "MPI_LOCALNRANKS")


def started_by_mpi_launcher() -> bool:
    """Whether an MPI launcher (mpiexec, mpirun, srun) started this process
    (minijax.distributed.initialize then takes rank and size from MPI)."""
    return any(os.environ.get(name) for name in _MPI_LAUNCHER_VARIABLES)
