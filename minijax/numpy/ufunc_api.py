"""`jnp.ufunc` (JAX's NumPy-style universal function object) and `jnp.frompyfunc`.

A ufunc wraps an elementwise function and adds NumPy's methods: `reduce`, `accumulate`,
`at`, `outer` and `reduceat`, with `nin`, `nout`, `nargs` and `identity`. As in JAX, the
binary and unary arithmetic/logic functions of jax.numpy are ufunc objects (add, multiply,
subtract, negative, maximum, minimum, logaddexp, logaddexp2, bitwise_and/or/xor,
logical_and/or/xor); their common methods use the matching reduction (`add.reduce` is
`sum`, `multiply.accumulate` is `cumprod`, `add.at` is `x.at[i].add`), and everything else
runs the scalar function in a loop (fori_loop / scan), as JAX does.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.core import ShapedArray, get_aval
from minijax.lax.control_flow_common import trace_user_fun
from minijax.lax.vmap import vmap
from minijax.numpy import reductions, ufuncs, ufuncs_logic, util
from minijax.numpy.creation import _user_dtype
from minijax.numpy.manipulation import concatenate, moveaxis
from minijax.numpy.util import check_arraylike, to_array
from minijax.tree_util import tree_structure

__all__ = ["frompyfunc", "ufunc"]

_AT_INPLACE = ("jax.numpy.ufunc.at cannot be applied in-place; JAX arrays are immutable. "
               "Pass inplace=False to instead return an updated array.")

_PROPS = ("func", "nin", "nout", "nargs", "identity", "call", "reduce", "accumulate", "at",
          "reduceat")


class ufunc:  # noqa: N801 - JAX's name
    """A universal function: an elementwise function of `nin` arrays with NumPy's ufunc
    methods (`reduce`, `accumulate`, `at`, `outer`, `reduceat`), as `jax.numpy.ufunc`.

    `ufunc(func, nin, nout, *, name=None, nargs=None, identity=None, call=None,
    reduce=None, accumulate=None, at=None, reduceat=None)`: `func` takes and returns
    scalars (it is vectorized by broadcasting); the optional callables replace the generic
    implementation of the corresponding method.
    """

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
                 call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        # Read-only properties: ufuncs are hashable and may be static arguments of jit.
        object.__setattr__(self, "_props", {
            "func": func, "nin": operator.index(nin), "nout": operator.index(nout),
            "nargs": operator.index(nargs or nin), "identity": identity, "call": call,
            "reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat})

    _func = property(lambda self: self._props["func"])
    nin = property(lambda self: self._props["nin"])
    nout = property(lambda self: self._props["nout"])
    nargs = property(lambda self: self._props["nargs"])
    identity = property(lambda self: self._props["identity"])

    def _key(self):
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        call = self._props["call"]
        if call is not None:
            return call(*args)
        check_arraylike(self.__name__, *args)
        return self._call_vectorized(*args)

    def _call_vectorized(self, *args):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments but "
                            f"{len(args)} were given")
        arrays = [to_array(a) for a in args]
        shape = util.broadcast_shapes(*(a.shape for a in arrays))
        flat = [util.broadcast_to(a, shape).reshape(-1) for a in arrays]
        outs = vmap(self._func)(*flat)
        if self.nout == 1:
            return to_array(outs).reshape(shape)
        return tuple(to_array(o).reshape(shape) for o in outs)

    def _binary_only(self, method: str):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _result_dtype(self, *arrays):
        avals = [ShapedArray((), get_aval(a).dtype) for a in arrays]
        jaxpr, _, _ = trace_user_fun(self._func, tree_structure(tuple(avals)), avals,
                                     f"{self.__name__} result type")
        return jaxpr.out_avals[0].dtype

    # ----------------------------------------------------------------------- reduce

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """Reduce `a` along `axis` (an int or None) with this binary ufunc, as NumPy's
        ufunc.reduce; `where` needs an identity or `initial`."""
        check_arraylike(f"{self.__name__}.reduce", a)
        self._binary_only("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
            if get_aval(where).dtype != np.bool_:
                raise ValueError("where argument must have dtype=bool; got "
                                 f"dtype={get_aval(where).dtype}")
        fn = self._props["reduce"] or self._reduce_via_loop
        return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

    def _reduce_via_loop(self, arr, axis=0, dtype=None, keepdims=False, initial=None,
                         where=None):
        arr = to_array(arr)
        if initial is None:
            initial = self.identity
        dtype = self._result_dtype(arr, arr) if dtype is None else _user_dtype(dtype)
        if where is not None:
            where = util.broadcast_to(to_array(where), arr.shape)
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final_shape = (1,) * arr.ndim if keepdims else ()
            arr = arr.reshape(-1)
            where = None if where is None else where.reshape(-1)
            axis = 0
        else:
            axis = util.canonicalize_axis(axis, arr.ndim)
            final_shape = arr.shape[:axis] + ((1,) if keepdims else ()) + arr.shape[axis + 1:]
        if axis != 0:
            arr = moveaxis(arr, axis, 0)
            where = None if where is None else moveaxis(where, axis, 0)
        if arr.shape[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return lax.full(final_shape, initial, dtype)

        def step(i, acc):
            new = self(acc, lax.dynamic_index_in_dim(arr, i, 0, False).astype(dtype))
            if where is None:
                return new
            return ufuncs._select(lax.dynamic_index_in_dim(where, i, 0, False), new, acc)

        start, first = (1, arr[0]) if initial is None else (0, initial)
        first = util.broadcast_to(to_array(first).astype(dtype), arr.shape[1:])
        result = lax.fori_loop(start, arr.shape[0], step, first)
        return result.reshape(final_shape) if keepdims else result

    # ----------------------------------------------------------------------- accumulate

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """Running reduction of `a` along `axis` with this binary ufunc (NumPy's
        ufunc.accumulate): `add.accumulate` is cumsum."""
        self._binary_only("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        fn = self._props["accumulate"] or self._accumulate_via_scan
        return fn(a, axis=axis, dtype=dtype)

    def _accumulate_via_scan(self, arr, axis=0, dtype=None):
        check_arraylike(f"{self.__name__}.accumulate", arr)
        arr = to_array(arr)
        dtype = self._result_dtype(arr, arr) if dtype is None else _user_dtype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        axis = util.canonicalize_axis(axis, arr.ndim)
        if arr.size == 0:
            return lax.full(arr.shape, 0, dtype)
        arr = moveaxis(arr, axis, 0)

        def step(acc, x):
            acc = self(acc, x.astype(dtype)).astype(dtype)
            return acc, acc

        first = arr[0].astype(dtype)
        _, rest = lax.scan(step, first, arr[1:])
        return moveaxis(concatenate([first[None], rest]), 0, axis)

    # ----------------------------------------------------------------------- at

    def at(self, a, indices, b=None, /, *, inplace=True):
        """`a` with this ufunc applied at `indices` (with `b` for binary ufuncs), repeated
        indices applied once each, as NumPy's ufunc.at. Requires `inplace=False`: the
        updated array is returned."""
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        fn = self._props["at"] or self._at_via_scan
        return fn(a, indices) if b is None else fn(a, indices, b)

    def _at_via_scan(self, a, indices, *args):
        check_arraylike(f"{self.__name__}.at", a, *args)
        dtype = self._result_dtype(a, *args)
        a = to_array(a).astype(dtype)
        args = tuple(to_array(x).astype(dtype) for x in args)
        if not isinstance(indices, tuple):
            indices = (indices,)
        if not indices:
            return a
        shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
        shape = util.broadcast_shapes(*shapes) if shapes else ()
        if not shape:
            return a.at[indices].set(self(a.at[indices].get(), *args))
        if args:
            tail = args[0].shape[len(shape):]
            arg = util.broadcast_to(args[0], (*shape, *tail))
            args = (arg.reshape(int(np.prod(shape)), *tail),)
        indices = [i if isinstance(i, slice) else util.broadcast_to(to_array(i), shape)
                   .reshape(-1) for i in indices]
        n = next(i for i in indices if not isinstance(i, slice)).shape[0]

        def step(arr, k):
            idx = tuple(i if isinstance(i, slice) else i[k] for i in indices)
            return arr.at[idx].set(self(arr.at[idx].get(), *(x[k] for x in args))), None

        out, _ = lax.scan(step, a, lax.iota(np.int32, n))
        return out

    # ----------------------------------------------------------------------- reduceat

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions over the segments [indices[i], indices[i+1]) of `a` along `axis` (a
        segment whose end is not after its start is just a[indices[i]]), as NumPy's."""
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        fn = self._props["reduceat"] or self._reduceat_via_loop
        return fn(a, indices, axis=axis, dtype=dtype)

    def _reduceat_via_loop(self, a, indices, axis=0, dtype=None):
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a, indices = to_array(a), to_array(indices)
        if a.ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={a.shape}")
        if indices.ndim != 1:
            raise ValueError("reduceat: indices must be one-dimensional, got "
                             f"indices.shape={indices.shape}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = util.canonicalize_axis(axis, a.ndim)
        a = moveaxis(a, axis, 0)
        if dtype is not None:
            a = a.astype(_user_dtype(dtype))
        starts = indices
        ends = concatenate([indices[1:], to_array(np.array([a.shape[0]], indices.dtype))])
        result = a[starts]
        bshape = (indices.shape[0],) + (1,) * (a.ndim - 1)
        lo, hi = starts.reshape(bshape), ends.reshape(bshape)

        def step(i, acc):
            row = lax.dynamic_index_in_dim(a, i, 0, True)
            inside = ufuncs_logic.logical_and(i > lo, i < hi)
            return ufuncs._select(util.broadcast_to(inside, acc.shape), self(acc, row), acc)

        return moveaxis(lax.fori_loop(0, a.shape[0], step, result), 0, axis)

    # ----------------------------------------------------------------------- outer

    def outer(self, A, B, /):
        """This ufunc applied to every pair (a, b) of elements of A and B: the result has
        shape A.shape + B.shape."""
        self._binary_only("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = to_array(A), to_array(B)
        return self(A.reshape(A.shape + (1,) * B.ndim), B)


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A `ufunc` from a scalar function of `nin` arguments returning `nout` values (traced
    with minijax, so written in minijax.numpy / lax terms)."""
    return ufunc(func, nin, nout, identity=identity)


# --------------------------------------------------------------------------- jnp's ufuncs


def _at_update(method):
    def at(a, indices, b):
        a = to_array(a)
        if a.dtype == np.bool_:   # as JAX: count in int32, then back to bool
            b = to_array(b).astype(np.bool_).astype(np.int32)
            return getattr(a.astype(np.int32).at[indices], method)(b).astype(np.bool_)
        return getattr(a.at[indices], method)(b)
    return at


def _with_dtype(reduction):
    """max/min reductions with JAX's extra dtype argument (the input is cast first)."""
    def reduce(a, axis=None, dtype=None, keepdims=False, initial=None, where=None):
        a = to_array(a)
        if dtype is not None:
            a = a.astype(_user_dtype(dtype))
        return reduction(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    return reduce


def _binary(func, identity, **methods):
    return ufunc(func, 2, 1, name=func.__name__, identity=identity, call=func, **methods)


add = _binary(ufuncs.add, 0, reduce=reductions.sum, accumulate=reductions.cumsum,
              at=_at_update("add"))
multiply = _binary(ufuncs.multiply, 1, reduce=reductions.prod,
                   accumulate=reductions.cumprod, at=_at_update("multiply"))
subtract = _binary(ufuncs.subtract, None,
                   at=lambda a, i, b: to_array(a).at[i].subtract(b))
maximum = _binary(ufuncs.maximum, None, reduce=_with_dtype(reductions.max))
minimum = _binary(ufuncs.minimum, None, reduce=_with_dtype(reductions.min))
logaddexp = _binary(ufuncs.logaddexp, -np.inf)
logaddexp2 = _binary(ufuncs.logaddexp2, -np.inf)
bitwise_and = _binary(ufuncs_logic.bitwise_and, -1)
bitwise_or = _binary(ufuncs_logic.bitwise_or, 0)
bitwise_xor = _binary(ufuncs_logic.bitwise_xor, 0)
logical_and = _binary(ufuncs_logic.logical_and, True)
logical_or = _binary(ufuncs_logic.logical_or, False)
logical_xor = _binary(ufuncs_logic.logical_xor, False)
negative = ufunc(ufuncs.negative, 1, 1, name="negative", call=ufuncs.negative)
