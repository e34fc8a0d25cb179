"""The `accuracy=` argument of lax's transcendental functions (exp, log, sin, tanh, ...):
`AccuracyMode` and `Tolerance`, as in JAX.

minijax computes each of these functions with one implementation accurate to a few ulps
(its HIGHEST mode); a requested mode or tolerance is validated and then met by that
implementation, so it does not change results.
"""

from __future__ import annotations

import enum

__all__ = ["AccuracyMode", "Tolerance", "check_accuracy"]


class AccuracyMode(enum.Enum):
    """Requested accuracy of a unary function: HIGHEST or the backend's DEFAULT."""
    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Tolerances for a unary function's result: at most two of atol, rtol and ulps."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self) -> str:
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def check_accuracy(accuracy) -> None:
    """Raise as JAX does for an `accuracy` that is neither None, an AccuracyMode nor a
    Tolerance."""
    if accuracy is not None and not isinstance(accuracy, (AccuracyMode, Tolerance)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")
