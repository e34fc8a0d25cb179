"""Top-level ``jax`` names for the import hook that minijax does not (yet) define itself.

``jax.X`` is ``minijax.X`` whenever minijax has it; these are used only otherwise.

- :func:`named_scope` and :func:`ensure_compile_time_eval` as context managers: minijax
  records no name stack in op metadata, and its eager mode already evaluates eagerly.
"""

from __future__ import annotations

import contextlib

__all__ = ["ensure_compile_time_eval", "named_scope"]


@contextlib.contextmanager
def named_scope(name: str):
    """Name the operations of the block (JAX prefixes their op names); a plain block here."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Evaluate eagerly inside the block; minijax evaluates concrete values eagerly anyway."""
    yield
