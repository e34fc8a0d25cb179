"""Mutable array references (``jax.new_ref``, ``jax.Ref``, ``jax.ref.get/set/swap``).

A :class:`Ref` holds an array value that ``ref[idx]`` reads and ``ref[idx] = v`` replaces,
eagerly and inside transformations:

- Inside a transformed function (``grad``, ``vmap``, ``jit``) a ref created there holds that
  transformation's traced values: reads and writes are ordinary functional updates of the
  held value (``value.at[idx].set(v)``), so they differentiate and batch like any other
  operation. Refs of enclosing scopes can be read inside ``grad``/``vmap`` (their value is a
  constant there).
- ``jit`` takes refs as arguments: the compiled program receives each ref's value as an
  input and returns its final value as an extra output, which is written back into the ref
  after the call (JAX's "state discharge"). A ref reached only through a closure from
  inside ``jit`` is an error that says to pass it as an argument: its reads would be baked
  into the cached program as constants.

As in JAX, a write must match the ref's shape (after indexing) and dtype exactly; Python
scalars take the ref's dtype when they are of the same kind (``1.0`` into a float ref).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from minijax import core, random, tree_util
from minijax import numpy as jnp
from minijax.interpreters.partial_eval import JaxprTrace

__all__ = ["AbstractRef", "Ref", "addupdate", "freeze", "get", "new_ref", "set", "swap",
           "typeof"]


class AbstractRef:
    """The type of a :class:`Ref`: ``Ref{f32[3]}`` wraps the aval of the value it holds."""

    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval: core.ShapedArray):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)
    weak_type = property(lambda self: self.inner_aval.weak_type)

    def __eq__(self, other) -> bool:
        return type(other) is AbstractRef and other.inner_aval == self.inner_aval

    def __hash__(self) -> int:
        return hash(("Ref", self.inner_aval))

    def str_short(self) -> str:
        return f"Ref{{{self.inner_aval.str_short()}}}"

    __repr__ = str_short


class Ref:
    """A mutable reference to an array: ``ref[...]`` reads it, ``ref[idx] = v`` writes."""

    __slots__ = ("_value", "_trace", "__weakref__")

    def __init__(self, value, trace: core.Trace):
        self._value = value
        self._trace = trace

    @property
    def _aval(self) -> AbstractRef:
        aval = typeof(self._value)
        return AbstractRef(aval.strip_weak_type() if isinstance(aval, core.ShapedArray)
                           else aval)

    shape = property(lambda self: typeof(self._value).shape)
    dtype = property(lambda self: typeof(self._value).dtype)
    ndim = property(lambda self: typeof(self._value).ndim)
    size = property(lambda self: math.prod(typeof(self._value).shape))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized Ref")
        return self.shape[0]

    def __getitem__(self, idx):
        return get(self, idx)

    def __setitem__(self, idx, value):
        set(self, idx, value)

    def __repr__(self) -> str:
        if isinstance(self._value, core.Tracer):
            return f"Ref<{self._aval.str_short()}>"
        return "Ref(" + repr(np.asarray(self._value))[len("array("):]

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other


#: High-level types (jax.experimental.hijax): value type -> its aval function.
_hitypes: dict = {}


def register_hitype(value_type: type, to_aval) -> None:
    """Declare ``value_type`` a high-level type; ``to_aval(value)`` is its abstract type."""
    _hitypes[value_type] = to_aval


def hitype_aval(x):
    """The registered abstract type of a hi-type value ``x``, or None."""
    for cls in type(x).__mro__:
        if cls in _hitypes:
            return _hitypes[cls](x)
    return None


def typeof(x):
    """The abstract type of ``x``: a ShapedArray, an :class:`AbstractRef` for a ref, or a
    registered hi-type's aval (:func:`register_hitype`)."""
    if isinstance(x, Ref):
        return x._aval
    aval = hitype_aval(x)
    if aval is not None:
        return aval
    if _is_key(x):
        return KeyAval(x.shape, x.dtype)
    return core.get_aval(x)


class KeyAval:
    """The type of a typed PRNG key array (``key<fry>[2]``): its shape and key dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype

    ndim = property(lambda self: len(self.shape))
    weak_type = False

    def __eq__(self, other) -> bool:
        return type(other) is KeyAval and (other.shape, other.dtype) == (self.shape, self.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, str(self.dtype)))

    def str_short(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    __repr__ = str_short


def new_ref(init_val, *, memory_space=None) -> Ref:
    """A new :class:`Ref` holding ``init_val`` (an array or scalar)."""
    del memory_space
    if _is_key(init_val):  # typed PRNG key arrays are stored as they are
        return Ref(init_val, core.current_trace())
    value = jnp.asarray(init_val)
    if core.get_aval(value).weak_type:
        value = jnp.asarray(value, dtype=value.dtype)  # a ref's dtype is strong, as in JAX
    return Ref(value, core.current_trace())


def _check_access(ref: Ref, op: str, write: bool) -> None:
    if not isinstance(ref, Ref):
        raise TypeError(f"{op} expects a Ref (from new_ref), got {type(ref).__name__}.")
    trace = core.current_trace()
    if trace is ref._trace:
        return
    # Reaching the ref's trace through enclosing traces: allowed to read unless a jit
    # (staging) trace is crossed, whose cached program would bake the value in.
    t = trace
    while t is not None and t is not ref._trace:
        if isinstance(t, JaxprTrace) and t.purpose == "jit":
            raise TypeError(
                f"{op}: a Ref created outside a jit-ed function was used inside it through a "
                "closure. Pass the Ref to the jit-ed function as an argument: jit passes the "
                "ref's value in and writes its final value back after the call.")
        t = t.parent
    if t is None:
        raise TypeError(f"{op}: this Ref was created inside a transformation that has "
                        "finished (it escaped it); refs cannot outlive their function.")
    if write:
        raise TypeError(f"{op}: writing to a Ref created outside this transformation "
                        f"({trace}) is not supported; create the ref inside the transformed "
                        "function, or pass it to jit as an argument.")


def _norm_index(idx):
    if idx is Ellipsis or (isinstance(idx, tuple) and len(idx) == 0):
        return None
    return idx


def get(ref: Ref, idx=()):
    """``ref[idx]``: the value held by ``ref`` (indexed like an array; ``()`` or ``...``
    for all of it)."""
    _check_access(ref, "ref get", write=False)
    idx = _norm_index(idx)
    return ref._value if idx is None else ref._value[idx]


def _is_key(x) -> bool:
    return isinstance(getattr(x, "dtype", None), random.KeyDType)


def _coerce(ref: Ref, idx, value, op: str):
    if _is_key(ref._value) or _is_key(value):
        old = ref._value if idx is None else ref._value[idx]
        if typeof(old) != typeof(value):
            raise ValueError(f"Invalid type for `{op}`. Ref holds {typeof(old)}. Value: "
                             f"{typeof(value)}.")
        return value
    target = core.get_aval(ref._value)
    expected = target.shape if idx is None else core.get_aval(ref._value[idx]).shape
    value = jnp.asarray(value)
    aval = core.get_aval(value)
    if aval.dtype != target.dtype:
        same_kind = np.result_type(aval.dtype, target.dtype) == target.dtype and (
            aval.dtype.kind == target.dtype.kind)
        if not (aval.weak_type and same_kind):
            raise ValueError(f"Invalid dtype for `{op}`. Ref dtype: {target.dtype}. Value "
                             f"dtype: {aval.dtype}.")
        value = jnp.asarray(value, dtype=target.dtype)
    if tuple(aval.shape) != tuple(expected):
        raise ValueError(f"Invalid shape for `{op}`. Ref shape: {target.shape}. Expected "
                         f"shape: {expected}. Value shape: {aval.shape}. Index: {idx}.")
    return value


def swap(ref: Ref, idx, value):
    """Write ``value`` at ``ref[idx]`` and return what was there."""
    _check_access(ref, "ref swap", write=True)
    idx = _norm_index(idx)
    value = _coerce(ref, idx, value, "swap")
    old = ref._value if idx is None else ref._value[idx]
    ref._value = value if idx is None else ref._value.at[idx].set(value)
    return old


def set(ref: Ref, idx, value) -> None:  # noqa: A001 (jax.ref.set)
    """``ref[idx] = value``."""
    swap(ref, idx, value)


def addupdate(ref: Ref, idx, value) -> None:
    """``ref[idx] += value``."""
    _check_access(ref, "ref addupdate", write=True)
    idx = _norm_index(idx)
    value = _coerce(ref, idx, value, "addupdate")
    ref._value = ref._value + value if idx is None else ref._value.at[idx].add(value)


def freeze(ref: Ref):
    """The value held by ``ref``, as an immutable array."""
    return get(ref, ())


# --------------------------------------------------------------------------- jit discharge


class _RefSlot:
    """Stands for a ref argument of jit: the ref's value (the child) and which distinct ref
    it is (the aux data, so the same ref passed twice stays one ref inside)."""

    __slots__ = ("value", "slot")

    def __init__(self, value, slot: int):
        self.value, self.slot = value, slot


tree_util.register_pytree_node(_RefSlot, lambda s: ((s.value,), s.slot),
                               lambda slot, children: _RefSlot(children[0], slot))

_discharged: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def has_refs(leaves) -> bool:
    """Whether any of ``leaves`` (flattened jit arguments) is a :class:`Ref`."""
    return any(type(x) is Ref for x in leaves)


def jit_call_with_refs(jitted, args, kwargs, make_jit):
    """Call ``jitted`` (a jit-wrapped function) on arguments containing refs: the refs'
    values go in, their final values come out and are written back into the refs."""
    order: dict[int, int] = {}
    originals: list[Ref] = []

    def to_slot(x):
        if type(x) is not Ref:
            return x
        _check_access(x, "jit argument", write=True)
        if id(x) not in order:
            order[id(x)] = len(originals)
            originals.append(x)
        return _RefSlot(x._value, order[id(x)])

    args, kwargs = tree_util.tree_map(to_slot, (args, kwargs))
    inner = _discharged.get(jitted)
    if inner is None:
        inner = _discharged[jitted] = make_jit(_discharging(jitted.__wrapped__))
    out, finals = inner(*args, **kwargs)
    for ref, value in zip(originals, finals):
        ref._value = value
    return out


def _discharging(fun):
    def discharged(*args, **kwargs):
        fresh: dict[int, Ref] = {}

        def from_slot(x):
            if isinstance(x, _RefSlot):
                if x.slot not in fresh:
                    fresh[x.slot] = Ref(x.value, core.current_trace())
                return fresh[x.slot]
            return x

        is_slot = lambda x: isinstance(x, _RefSlot)  # noqa: E731
        args, kwargs = tree_util.tree_map(from_slot, (args, kwargs), is_leaf=is_slot)
        out = fun(*args, **kwargs)
        for leaf in tree_util.tree_leaves(out):
            if isinstance(leaf, Ref):
                raise ValueError(
                    f"function {getattr(fun, '__name__', fun)} traced for jit returned a "
                    f"mutable array reference of type {leaf._aval.str_short()}, but mutable "
                    "array references cannot be returned; return ref[...] instead.")
        return out, tuple(fresh[i]._value for i in range(len(fresh)))

    discharged.__name__ = getattr(fun, "__name__", "discharged")
    return discharged
