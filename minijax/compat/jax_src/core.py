"""``jax._src.core``: minijax's core, plus :func:`trace_state_clean`."""

from minijax.core import *  # noqa: F403 - the module stands for JAX's core
from minijax.core import EvalTrace, current_trace


def trace_state_clean() -> bool:
    """True when no transformation is being traced (eager execution)."""
    return isinstance(current_trace(), EvalTrace)
