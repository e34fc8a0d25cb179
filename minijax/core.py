"""The tracing core: primitives, abstract values, traces and tracers, jaxprs.

How a primitive runs. `prim.bind(*args, **params)` hands the operation to the *current
trace*, a context value (not a global level counter):

- EvalTrace (the default) runs the primitive's implementation on concrete arrays.
- A transformation's trace (JVPTrace, BatchTrace, the staging JaxprTrace) turns the
  operation into other operations, which it binds while its *parent* trace (the trace that
  was current when it was created) is current.

Values that belong to a trace are its Tracers; any other value (an Array, a NumPy array, a
Python scalar, or a tracer of an enclosing transformation) is a constant for that trace.

Staged programs are Jaxprs: typed variables, equations with the user's source line, and
constants hoisted into constvars (ClosedJaxpr pairs a jaxpr with its constant values).
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any

import numpy as np

from minijax import display, dtypes
from minijax.errors import (
    ConcretizationTypeError,
    JaxprTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
    concretization_message,
    immutability_error,
)
from minijax.jaxpr_printer import jaxpr_to_text
from minijax.source_info import SourceInfo

# --------------------------------------------------------------------------- abstract values


class ShapedArray:
    """The abstract value of an array: shape, dtype and whether the dtype is weak."""

    __slots__ = ("shape", "dtype", "weak_type")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    ndim = property(lambda self: len(self.shape))

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def __eq__(self, other) -> bool:
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self) -> str:
        """`f32[3,4]`, the way jaxprs and error messages print types."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"


def get_aval(x) -> ShapedArray:
    """The abstract value of an Array, Tracer, NumPy value or Python scalar."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    if dtypes.is_python_scalar(x):
        return ShapedArray((), dtypes.python_scalar_dtype(x), type(x) is not bool)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
    raise TypeError(f"Value {_short_value_repr(x)} of type {type(x).__name__} is not a valid "
                    "minijax type (expected an Array, a NumPy array or a Python scalar)")


def _short_value_repr(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- primitives


class Primitive:
    """A named operation. Rules for transformations live in their interpreters' tables."""

    multiple_results = False

    def __init__(self, name: str):
        self.name = name
        self.impl = None
        self.abstract_eval = None

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args, **params):
        """Apply the primitive to `args` under the current trace."""
        return _state.trace.process_primitive(self, args, params)

    def def_impl(self, impl):
        """Register the concrete implementation (used by eager execution)."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule):
        """Register `rule(*avals, **params) -> aval` (a list of avals if multiple_results)."""
        self.abstract_eval = rule
        return rule


# --------------------------------------------------------------------------- traces


class Trace:
    """Base trace. `parent` is the trace that was current when this one was created."""

    def __init__(self, parent: Trace | None = None):
        self.parent = parent

    def process_primitive(self, primitive: Primitive, args, params):
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__


class EvalTrace(Trace):
    """Runs primitives on concrete values through their `impl` (eager execution)."""

    def process_primitive(self, primitive, args, params):
        for arg in args:
            if isinstance(arg, Tracer):
                raise _escaped_tracer_error(primitive, arg)
        if primitive.impl is None:
            raise NotImplementedError(f"primitive {primitive.name} has no eager implementation")
        return primitive.impl(*args, **params)


def _escaped_tracer_error(primitive, tracer):
    origin = getattr(tracer, "_trace", None)
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {tracer.short_repr()} in {primitive.name}. A value "
        f"created inside a transformed function ({origin}) escaped it, for example by being "
        "stored in a global, a list or an object attribute, and was used after the "
        "transformation finished. Return the value from the function instead of storing it."
        + (f"\nThe tracer was created at {tracer._created_at}." if getattr(
            tracer, "_created_at", None) else ""))


class _State(threading.local):
    def __init__(self):
        self.trace: Trace = EvalTrace()


_state = _State()
eval_trace = _state.trace


def current_trace() -> Trace:
    """The trace that `bind` hands operations to right now."""
    return _state.trace


@contextmanager
def set_current_trace(trace: Trace):
    """Make `trace` current for the duration of the block."""
    previous = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = previous


class Tracer:
    """A value being traced by `_trace`. Operators are installed by minijax.numpy."""

    __array_priority__ = 1000
    __slots__ = ("_trace", "__weakref__")

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def to_concrete_value(self):
        """The concrete value behind this tracer when one is known (e.g. a JVP's primal)."""
        return None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Python's own messages ("'X' object has no attribute 'foo'") name the class: users
        # see "Tracer", never an internal class such as JaxprTracer.
        cls.__name__ = "Tracer"

    def short_repr(self) -> str:
        return f"Traced<{self.aval.str_short()}>"

    def __repr__(self) -> str:
        return f"{self.short_repr()}with<{self._trace}>"

    def origin_description(self) -> str | None:
        return None

    # Concretization: Python needs a real value here.
    def _concrete(self, what: str, error_type, fixes: str):
        value = self.to_concrete_value()
        if value is not None:
            return value
        raise error_type(concretization_message(what, self, fixes))

    def __bool__(self):
        return bool(self._concrete(
            "The truth value of a traced array was requested (`if x`, `while x`, `and`/`or`, "
            "or bool(x))", TracerBoolConversionError, _BOOL_FIXES))

    def __int__(self):
        return int(self._concrete("int() was called on a traced array",
                                  TracerIntegerConversionError, _INT_FIXES))

    def __index__(self):
        return int(self._concrete("A traced array was used as an index or size",
                                  TracerIntegerConversionError, _INT_FIXES))

    def __float__(self):
        return float(self._concrete("float() was called on a traced array",
                                    ConcretizationTypeError, _INT_FIXES))

    def __complex__(self):
        return complex(self._concrete("complex() was called on a traced array",
                                      ConcretizationTypeError, _INT_FIXES))

    def __array__(self, dtype=None, copy=None):
        value = self.to_concrete_value()
        if value is not None:
            return np.asarray(value, dtype=dtype)
        raise TracerArrayConversionError(concretization_message(
            "The numpy.ndarray conversion method __array__() was called on a traced array",
            self, "Use minijax.numpy functions instead of numpy functions inside transformed "
            "code, or move the NumPy code outside the transformed function."))

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: {self.short_repr()}. Arrays and tracers are not "
                        "hashable; pass hashable values (tuples, Python scalars) as static "
                        "arguments instead.")

    def __setitem__(self, index, value):
        raise immutability_error(self, index)


_BOOL_FIXES = (
    "Python control flow cannot depend on traced values. Possible fixes:\n"
    "  - use minijax.numpy.where(cond, a, b) to select values elementwise;\n"
    "  - use minijax.lax.cond / lax.switch for branches, lax.while_loop / lax.fori_loop for "
    "loops;\n"
    "  - if the value is a configuration, mark the argument static: "
    "jit(f, static_argnums=...) or static_argnames=...")
_INT_FIXES = (
    "Shapes, sizes and Python integers must be known at trace time. Possible fixes:\n"
    "  - pass the value as a static argument: jit(f, static_argnums=...);\n"
    "  - compute it from shapes (x.shape[0]) rather than from array values;\n"
    "  - for value-dependent sizes use the size= argument (e.g. jnp.nonzero(x, size=n)).")


# --------------------------------------------------------------------------- jaxprs


class Var:
    """A jaxpr variable with an abstract value."""

    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self) -> str:
        return f"Var({self.count}:{self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in a jaxpr."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val})"


class JaxprEqn:
    """`outvars = primitive[params] invars`, with the user's source location."""

    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive, invars, outvars, params, source_info: SourceInfo):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = dict(params)
        self.source_info = source_info

    def __repr__(self) -> str:
        return f"JaxprEqn({self.primitive.name})"


class Jaxpr:
    """A typed first-order program: constvars, invars, equations, outvars."""

    def __init__(self, constvars, invars, outvars, eqns):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self) -> str:
        return jaxpr_to_text(self)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """Jupyter: the printed jaxpr, highlighted."""
        return display.jaxpr_html(str(self))

    def pretty_print(self, **kwargs) -> str:
        return jaxpr_to_text(self, **kwargs)


class ClosedJaxpr:
    """A jaxpr with values for its constvars."""

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self) -> str:
        return str(self.jaxpr)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """Jupyter: the printed jaxpr, highlighted."""
        return display.jaxpr_html(str(self))

    def pretty_print(self, **kwargs) -> str:
        return self.jaxpr.pretty_print(**kwargs)

    def __call__(self, *args):
        return eval_jaxpr(self.jaxpr, self.consts, *args)


def eval_jaxpr(jaxpr: Jaxpr, consts, *args) -> list:
    """Run a jaxpr by binding each equation's primitive under the current trace."""
    env: dict[Var, Any] = {}

    def read(v):
        return v.val if type(v) is Literal else env[v]

    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    env.update(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, outs, strict=True))
        else:
            env[eqn.outvars[0]] = outs
    return [read(v) for v in jaxpr.outvars]


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Check that every variable is defined once before use and types match abstract eval."""
    defined: set[Var] = set()

    def define(v, where):
        if v in defined:
            raise JaxprTypeError(f"variable {v} defined twice ({where})")
        defined.add(v)

    def use(v, where):
        if type(v) is Literal:
            return
        if v not in defined:
            raise JaxprTypeError(f"variable {v} used before definition in {where}")

    for v in jaxpr.constvars:
        define(v, "constvars")
    for v in jaxpr.invars:
        define(v, "invars")
    for eqn in jaxpr.eqns:
        where = f"{eqn.primitive.name} at {eqn.source_info}"
        for v in eqn.invars:
            use(v, where)
        rule = eqn.primitive.abstract_eval
        if rule is not None:
            out = rule(*[v.aval for v in eqn.invars], **eqn.params)
            outs = out if eqn.primitive.multiple_results else [out]
            for var, aval in zip(eqn.outvars, outs, strict=True):
                if (var.aval.shape, var.aval.dtype) != (aval.shape, aval.dtype):
                    raise JaxprTypeError(f"{where}: output typed {var.aval.str_short()} but "
                                         f"the primitive produces {aval.str_short()}")
        for v in eqn.outvars:
            define(v, where)
    for v in jaxpr.outvars:
        use(v, "outvars")


# Hooks that higher layers fill in, so that the core stays independent of lax.
zeros_like_aval = None     # zeros_like_aval(aval) -> array of zeros (set by minijax.lax)
add_any = None             # add_any(x, y) -> x + y for tangent accumulation (set by lax)
