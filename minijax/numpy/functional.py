"""Functional helpers of jax.numpy built on vmap: apply_along_axis, apply_over_axes,
fromfunction and vectorize (with excluded arguments and gufunc signatures)."""

from __future__ import annotations

import functools
import re

import numpy as np

from minijax.lax.vmap import vmap
from minijax.numpy import util
from minijax.numpy.creation import _shape, _user_dtype, arange
from minijax.numpy.manipulation import expand_dims
from minijax.numpy.util import broadcast_to, check_arraylike, to_array

__all__ = ["apply_along_axis", "apply_over_axes", "fromfunction", "vectorize"]


def _vmap(*args, **kwargs):
    return vmap(*args, **kwargs)



def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply func1d to the 1-D slices of `arr` along `axis` (vmap over the other axes)."""
    check_arraylike("apply_along_axis", arr)
    arr = to_array(arr)
    axis = util.canonicalize_axis(axis, arr.ndim)

    def func(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, arr.ndim - axis):
        func = _vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = _vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """Apply func(a, axis) repeatedly over `axes`, keeping reduced axes as size 1."""
    check_arraylike("apply_over_axes", a)
    a = to_array(a)
    for axis in [axes] if np.ndim(axes) == 0 else axes:
        b = func(a, axis=axis)
        if b.ndim == a.ndim:
            a = b
        elif b.ndim == a.ndim - 1:
            a = expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """function(*indices) evaluated over a grid of `shape` (vmapped over each index, as
    in JAX: `function` is traced with scalar index arguments)."""
    shape = _shape(shape)
    dtype = _user_dtype(dtype)
    n = len(shape)
    if kwargs:
        function = functools.partial(function, **kwargs)
    for i in range(n):
        in_axes = tuple(0 if j == n - 1 - i else None for j in range(n))
        function = _vmap(function, in_axes=in_axes)
    return function(*(arange(s, dtype=dtype) for s in shape))


_DIMS = r"\w+(?:\s*,\s*\w+)*"
_ARG = rf"\((?:{_DIMS})?\)"
_SIGNATURE = re.compile(rf"^\s*{_ARG}(?:\s*,\s*{_ARG})*\s*->\s*{_ARG}(?:\s*,\s*{_ARG})*\s*$")


def _parse_signature(signature: str):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    if not _SIGNATURE.match(signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = signature.split("->")

    def parse(part):
        return [tuple(d.strip() for d in dims.split(",") if d.strip())
                for dims in re.findall(r"\(([^()]*)\)", part)]

    return parse(ins), parse(outs)


def _check_output(out, out_dims, sizes):
    """Check one per-example output against its core dimensions, recording new sizes."""
    shape = np.shape(out)
    if len(shape) != len(out_dims):
        raise ValueError(f"output shape {shape} does not match core dimensions {out_dims}")
    for name, size in zip(out_dims, shape, strict=True):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"inconsistent size for core dimension {name!r}: "
                             f"{size} vs {sizes[name]}")


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """A function that maps `pyfunc` over the broadcast leading (loop) dimensions of its
    arguments with vmap. `pyfunc` sees scalars, or the core dimensions of a gufunc
    `signature` such as '(m,n),(n)->(m)'. `excluded` names positional indices or keyword
    names passed through unchanged."""
    excluded = frozenset(excluded)
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError(f"jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")
    parsed = None if signature is None else _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        positions = [i for i in range(len(args)) if i not in excluded]
        names = [k for k in kwargs if k not in excluded]
        dynamic = [args[i] for i in positions] + [kwargs[k] for k in names]
        check_arraylike("vectorize", *dynamic)
        dynamic = [to_array(a) for a in dynamic]
        if parsed is None:
            in_dims, out_dims = [()] * len(dynamic), None
        else:
            in_dims, out_dims = parsed
            if len(in_dims) != len(dynamic):
                raise TypeError(f"wrong number of positional arguments: expected "
                                f"{len(in_dims)}, got {len(dynamic)}")
        sizes, loop_shapes = {}, []
        for arr, dims in zip(dynamic, in_dims, strict=True):
            if arr.ndim < len(dims):
                raise ValueError(f"input with shape {arr.shape} does not have enough "
                                 f"dimensions for all core dimensions {dims}")
            core = arr.shape[arr.ndim - len(dims):]
            for name, size in zip(dims, core, strict=True):
                if sizes.setdefault(name, size) != size:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: "
                                     f"{size} vs {sizes[name]}")
            loop_shapes.append(arr.shape[:arr.ndim - len(dims)])
        loop = util.broadcast_shapes(*loop_shapes)
        dynamic = [broadcast_to(a, loop + a.shape[a.ndim - len(d):])
                   for a, d in zip(dynamic, in_dims, strict=True)]

        def core_fn(*vals):
            call_args = list(args)
            for i, v in zip(positions, vals, strict=False):
                call_args[i] = v
            call_kwargs = dict(kwargs)
            call_kwargs.update(zip(names, vals[len(positions):], strict=True))
            out = pyfunc(*call_args, **call_kwargs)
            if out_dims is not None:
                outs = out if len(out_dims) > 1 else (out,)
                if len(out_dims) > 1 and (not isinstance(out, tuple)
                                          or len(out) != len(out_dims)):
                    raise TypeError(f"output must be a tuple of length {len(out_dims)} for "
                                    f"signature {signature!r}")
                for o, dims in zip(outs, out_dims, strict=True):
                    _check_output(o, dims, sizes)
            return out

        fn = core_fn
        for _ in loop:
            fn = _vmap(fn)
        return fn(*dynamic)

    return wrapped
