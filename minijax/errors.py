"""minijax's exception types, named as in `jax.errors`."""

from __future__ import annotations

import numpy as np


class JAXTypeError(TypeError):
    """Base of minijax's tracing errors (they are TypeErrors, as in JAX)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where a concrete Python value is needed."""


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool(x)` / `if x:` on a traced value."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """`int(x)`, `x.__index__()` or use as a shape on a traced value."""


class TracerArrayConversionError(JAXTypeError):
    """`np.asarray(x)` on a traced value."""


class UnexpectedTracerError(Exception):
    """A tracer escaped the transformation that created it (a leaked tracer)."""


class JAXIndexError(IndexError):
    """Base of minijax's indexing errors (IndexErrors, as in JAX)."""


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed (raised by core.check_jaxpr)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """Boolean-mask indexing inside jit, whose result shape depends on values."""


class JaxRuntimeError(RuntimeError):
    """A runtime failure of the backend, e.g. an allocation larger than the memory there."""


class KeyReuseError(RuntimeError):
    """A PRNG key was consumed twice while the key-reuse check is on."""


def concretization_message(what: str, tracer, fixes: str) -> str:
    """The shared text of concretization errors: what failed, where the value came from."""
    aval = getattr(tracer, "aval", None)
    parts = [f"{what}: attempted to use the abstract value {tracer.short_repr()}"
             if hasattr(tracer, "short_repr") else what]
    origin = getattr(tracer, "origin_description", None)
    if origin is not None:
        described = origin()
        if described:
            parts.append(described)
    if aval is not None:
        parts.append(f"The value has shape {tuple(aval.shape)} and dtype {aval.dtype}.")
    parts.append(fixes)
    return "\n".join(parts)


def immutability_error(x, index) -> TypeError:
    """The TypeError for `x[idx] = y`, showing the functional `.at[]` rewrite."""
    idx = _index_text(index)
    return TypeError(
        f"'{type(x).__name__}' object does not support item assignment. minijax arrays are "
        f"immutable (as in JAX). Instead of ``x[{idx}] = y``, use ``x = x.at[{idx}].set(y)`` "
        "or another .at[] method (add, multiply, min, max, ...); see "
        "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


def _index_text(index) -> str:
    def one(i):
        if isinstance(i, slice):
            parts = ["" if p is None else str(p) for p in (i.start, i.stop, i.step)]
            return ":".join(parts[:2]) + (f":{parts[2]}" if i.step is not None else "")
        if i is Ellipsis:
            return "..."
        if i is None:
            return "None"
        if isinstance(i, (int, np.integer)):
            return str(int(i))
        return "idx"
    if isinstance(index, tuple):
        return ", ".join(one(i) for i in index)
    return one(index)
