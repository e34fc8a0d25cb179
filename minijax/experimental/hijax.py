"""``jax.experimental.hijax``: user-defined high-level primitives and types, the subset that
minijax supports.

A :class:`HiPrimitive` subclass defines ``impl`` (eager execution) and ``to_lojax`` (the
same operation written with ordinary operations). minijax runs ``impl`` on concrete values
and, under any transformation (``jit``, ``grad``, ``vmap``), lowers the primitive to its
``to_lojax`` form at bind time, so that the transformation sees ordinary operations; the
primitive's own ``jvp``/``transpose``/``abstract_eval`` rules are not consulted. (JAX keeps
hi-level primitives and types in its jaxprs until lowering and tracks their "quasi-dynamic
data", QDD; minijax does not: :func:`cur_qdd` raises, and hi-types cannot be jit arguments.)

:func:`register_hitype` maps a Python type to its abstract type for ``typeof``;
:class:`aval_method` / :class:`aval_property` mark methods of a hi-type's aval class that
run on its values.
"""

from __future__ import annotations

from minijax import core
from minijax import numpy as jnp
from minijax.extend.core import Effect
from minijax.ref import hitype_aval, register_hitype  # noqa: F401  (JAX's hijax names)

__all__ = ["AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType",
           "MutableHiType", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "cur_qdd", "instantiate_zeros",
           "is_undefined_primal", "register_hitype"]


class AbstractValue:
    """Base class of abstract types (minijax's arrays use ``core.ShapedArray``)."""

    def to_tangent_aval(self):
        return self

    def normalize(self):
        return self


class HiType(AbstractValue):
    """The abstract type of a user-defined high-level value."""

    has_qdd = False


class MutableHiType(HiType):
    """A high-level type whose values can change (JAX tracks them with QDD)."""

    has_qdd = True


class AvalQDD:
    """An abstract value paired with its quasi-dynamic data."""

    def __init__(self, aval, qdd):
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD:
    """An abstract value with QDD that a primitive's abstract evaluation may update."""

    def __init__(self, aval, mutable_qdd):
        self.aval, self.mutable_qdd = aval, mutable_qdd


class _EffectTypeSet:
    """A set of effect types (``control_flow_allowed_effects.add_type(E)``)."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, effect_type: type) -> None:
        if not (isinstance(effect_type, type) and issubclass(effect_type, Effect)):
            raise TypeError(f"add_type expects a subclass of Effect, got {effect_type!r}")
        self._types.add(effect_type)

    def contains(self, effect) -> bool:
        return any(isinstance(effect, t) for t in self._types)

    __contains__ = contains


control_flow_allowed_effects = _EffectTypeSet()



class aval_method:  # noqa: N801 (JAX's name)
    """A method of a hi-type's aval class that runs on the hi-type's values."""

    def __init__(self, fun):
        self.fun = fun
        self.__doc__ = getattr(fun, "__doc__", None)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return self.fun.__get__(obj, objtype)


class aval_property(property):  # noqa: N801 (JAX's name)
    """A property of a hi-type's aval class that runs on the hi-type's values."""


class Zero:
    """A symbolic zero tangent of abstract type ``aval``."""

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval})"


def instantiate_zeros(x):
    """``x``, with a symbolic :class:`Zero` made into an array of zeros."""
    if isinstance(x, Zero):
        return jnp.zeros(x.aval.shape, x.aval.dtype)
    return x


def is_undefined_primal(x) -> bool:
    """Whether ``x`` is a linear input of a transpose rule (never: minijax does not call
    hi-primitives' transpose rules)."""
    del x
    return False


def cur_qdd(x):
    """The current quasi-dynamic data of a mutable hi-type value (not tracked by minijax)."""
    raise NotImplementedError(
        f"cur_qdd({type(x).__name__}): minijax does not track quasi-dynamic data of "
        "mutable hi-types (JAX's hijax feature); only HiPrimitives without QDD are supported.")


class HiPrimitive(core.Primitive):
    """A primitive defined by a Python class: ``impl`` runs it eagerly and ``to_lojax``
    expresses it with ordinary operations, which is what transformations see."""

    def __init__(self, name: str):
        super().__init__(name)
        self.impl = self._run_impl

    def _run_impl(self, *args, **params):
        return type(self).impl(self, *args, **params)

    def bind(self, *args, **params):
        if type(core.current_trace()) is core.EvalTrace and not any(
                isinstance(a, core.Tracer) for a in args):
            return type(self).impl(self, *args, **params)
        return self.to_lojax(*args, **params)

    def impl(self, *args, **params):
        raise NotImplementedError(f"HiPrimitive {self.name} defines no impl")

    def to_lojax(self, *args, **params):
        raise NotImplementedError(f"HiPrimitive {self.name} defines no to_lojax, so it "
                                  "cannot run under a transformation on minijax")

    def is_high(self, *args, **params) -> bool:
        return True


def is_hitype_value(x) -> bool:
    """Whether ``x`` is a value of a registered hi-type."""
    return hitype_aval(x) is not None

