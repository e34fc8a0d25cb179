"""``jax.extend.linear_util``: a function wrapped together with its keyword parameters."""

from __future__ import annotations

import functools

__all__ = ["WrappedFun", "wrap_init"]


class WrappedFun:
    """``f`` with fixed keyword ``params``; :meth:`call_wrapped` calls ``f(*args, **params)``.

    ``transforms`` are applied innermost-first around ``f`` (see :meth:`wrap`).
    """

    def __init__(self, f, params=None, debug_info=None, transforms=()):
        self.f = f
        self.params = dict(params or {})
        self.debug_info = debug_info
        self.transforms = tuple(transforms)

    @property
    def __name__(self):
        return getattr(self.f, "__name__", type(self.f).__name__)

    def wrap(self, transform) -> WrappedFun:
        """A new WrappedFun whose call passes through ``transform(inner, *args)``."""
        return WrappedFun(self.f, self.params, self.debug_info, self.transforms + (transform,))

    def call_wrapped(self, *args, **kwargs):
        call = functools.partial(self.f, **self.params)
        for transform in self.transforms:
            call = functools.partial(transform, call)
        return call(*args, **kwargs)

    def __repr__(self):
        return f"Wrapped function: {self.__name__}"


def wrap_init(f, params=None, *, debug_info=None) -> WrappedFun:
    """Wrap ``f`` (called with ``params`` as keyword arguments)."""
    return WrappedFun(f, params, debug_info)
