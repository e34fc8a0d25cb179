"""``jax.experimental.checkify`` for concrete predicates.

:func:`check` raises :class:`JaxRuntimeError` when its predicate is false and
:func:`checkify` turns such failures into an :class:`Error` value returned next to the
function's output, as JAX does. minijax checks predicates it can see the value of (eager
code, and values a transformation knows concretely); a predicate that is only known inside a
compiled program (under ``jit``) raises NotImplementedError naming the check, rather than
being skipped. The automatic NaN / index / division checks are not implemented: asking for
them in ``errors=`` raises NotImplementedError.
"""

from __future__ import annotations

import functools

import numpy as np

from minijax.core import Tracer
from minijax.errors import JaxRuntimeError

__all__ = ["DivisionByZeroError", "Error", "ErrorCategory", "FailedCheckError", "JaxRuntimeError",
           "NaNError", "OOBError", "all_checks", "automatic_checks", "check", "check_error",
           "checkify", "div_checks", "float_checks", "index_checks", "nan_checks",
           "user_checks"]


class ErrorCategory:
    """Base of the kinds of checks (JAX's categories)."""


class FailedCheckError(ErrorCategory):
    """A user's :func:`check` failed."""


class NaNError(ErrorCategory):
    """A NaN was produced (automatic check; not implemented in minijax)."""


class OOBError(ErrorCategory):
    """An index was out of bounds (automatic check; not implemented in minijax)."""


class DivisionByZeroError(ErrorCategory):
    """A division by zero (automatic check; not implemented in minijax)."""


user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


class Error:
    """The outcome of a checkified function: :meth:`get` is the message or None."""

    def __init__(self, message: str | None = None):
        self._message = message

    def get(self) -> str | None:
        """The first failed check's message, or None when every check passed."""
        return self._message

    def throw(self) -> None:
        """Raise :class:`JaxRuntimeError` if a check failed."""
        check_error(self)

    def __repr__(self):
        return f"Error({self._message!r})"


def _concrete(pred):
    if isinstance(pred, Tracer):
        value = pred.to_concrete_value()
        if value is None:
            raise NotImplementedError(
                "checkify.check: the predicate is only known inside a compiled or traced "
                "program (under jit, vmap or scan); minijax checks concrete predicates only. "
                "Hint: call the check outside jit, or use a debug callback.")
        return np.asarray(value)
    return np.asarray(pred)


def check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """Raise :class:`JaxRuntimeError` with ``msg.format(*fmt_args, **fmt_kwargs)`` unless
    every element of ``pred`` is true."""
    if not np.all(_concrete(pred)):
        args = [np.asarray(_concrete(a)) for a in fmt_args]
        kwargs = {k: np.asarray(_concrete(v)) for k, v in fmt_kwargs.items()}
        raise JaxRuntimeError(msg.format(*args, **kwargs))


def check_error(error: Error) -> None:
    """Raise :class:`JaxRuntimeError` if ``error`` holds a failed check."""
    if error.get() is not None:
        raise JaxRuntimeError(error.get())


def checkify(fun, errors=user_checks):
    """``checkify(f)(*args) -> (Error, out)``: failed :func:`check` calls become the Error."""
    unsupported = set(errors) - set(user_checks)
    if unsupported:
        names = sorted(c.__name__ for c in unsupported)
        raise NotImplementedError(f"checkify: automatic checks {names} are not implemented in "
                                  "minijax; use errors=checkify.user_checks.")

    @functools.wraps(fun)
    def checked(*args, **kwargs):
        try:
            return Error(None), fun(*args, **kwargs)
        except JaxRuntimeError as e:
            return Error(str(e)), None

    return checked
