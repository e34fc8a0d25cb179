"""Jacobians: jacfwd (forward mode over a basis), jacrev (reverse mode), hessian."""

from __future__ import annotations

import numpy as np

from minijax import dtypes, tree_util
from minijax.api import _check_input_dtype_revderiv, _check_output_dtype_revderiv, jvp, vjp, vmap
from minijax.api_util import normalize_argnums
from minijax.core import get_aval
from minijax.dispatch import device_put
from minijax.lax import convert_element_type, reshape, slice_in_dim


def _std_basis(leaves):
    """One-hot tangents for every element of the flat inputs, stacked on a new axis."""
    sizes = [int(np.prod(get_aval(x).shape, dtype=np.int64)) for x in leaves]
    total = sum(sizes)
    dtype = dtypes.result_type(*[get_aval(x).dtype for x in leaves])
    eye = np.eye(total, dtype=dtype)
    out, start = [], 0
    for x, n in zip(leaves, sizes, strict=True):
        aval = get_aval(x)
        out.append(device_put(eye[:, start:start + n].reshape((total,) + aval.shape)
                              .astype(aval.dtype)))
        start += n
    return out, sizes


def jacfwd(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Jacobian by forward mode (vmap of jvp over the standard basis)."""
    def jac(*args):
        nums = normalize_argnums(argnums, len(args), "jacfwd")
        diff = [args[i] for i in nums]
        leaves, tree = tree_util.tree_flatten(diff)
        for leaf in leaves:
            _check_input_dtype_jacfwd(holomorphic, leaf)
        basis, sizes = _std_basis(leaves)

        def f_flat(*flat):
            full = list(args)
            for i, v in zip(nums, tree_util.tree_unflatten(tree, flat), strict=True):
                full[i] = v
            return fun(*full)

        def push(*tangent):
            return jvp(f_flat, tuple(leaves), tuple(tangent), has_aux=has_aux)
        if has_aux:
            y, jac_cols, aux = vmap(push, out_axes=(None, -1, None))(*basis)
        else:
            y, jac_cols = vmap(push, out_axes=(None, -1))(*basis)
        out = tree_util.tree_map(lambda yl, jl: _split_cols(yl, jl, leaves, sizes, tree,
                                                            isinstance(argnums, int)),
                                 y, jac_cols)
        return (out, aux) if has_aux else out
    return jac


def _check_input_dtype_jacfwd(holomorphic, x):
    dtype = get_aval(x).dtype
    if holomorphic:
        if dtype.kind != "c":
            raise TypeError(f"jacfwd with holomorphic=True requires inputs with complex "
                            f"dtype, but got {dtype.name}.")
    elif dtypes.kind(dtype) != "f":
        raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype "
                        f"of np.floating), but got {dtype.name}. For holomorphic "
                        "differentiation, pass holomorphic=True. For differentiation of "
                        "non-holomorphic functions involving complex inputs or integer "
                        "inputs, use jax.jvp directly.")


def _like(block, example):
    """A Jacobian block takes its example's dtype and weak type (as JAX's unravel does: the
    output's for jacfwd, the input's for jacrev)."""
    aval = get_aval(example)
    return convert_element_type(block, aval.dtype, aval.weak_type)


def _split_cols(y, jcols, leaves, sizes, tree, single):
    out_shape = get_aval(y).shape
    if isinstance(jcols, np.ndarray) and jcols.dtype == dtypes.float0:
        # An integer/bool output has float0 tangents; its Jacobian is zeros of its dtype.
        jcols = np.zeros(jcols.shape, get_aval(y).dtype)
    parts, start = [], 0
    for x, n in zip(leaves, sizes, strict=True):
        block = slice_in_dim(jcols, start, start + n, axis=get_aval(jcols).ndim - 1)
        parts.append(_like(reshape(block, out_shape + get_aval(x).shape), y))
        start += n
    res = tree_util.tree_unflatten(tree, parts)
    return res[0] if single else tuple(res)


def jacrev(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """Jacobian by reverse mode (vmap of vjp over the standard basis of the output)."""
    def jac(*args):
        nums = normalize_argnums(argnums, len(args), "jacrev")

        def partial_fun(*diff):
            full = list(args)
            for i, v in zip(nums, diff, strict=True):
                full[i] = v
            return fun(*full)
        diff = [args[i] for i in nums]
        for leaf in tree_util.tree_leaves(diff):
            _check_input_dtype_revderiv("jacrev", holomorphic, allow_int, leaf)
        if has_aux:
            y, vjp_fn, aux = vjp(partial_fun, *diff, has_aux=True)
        else:
            y, vjp_fn = vjp(partial_fun, *diff)
        y_leaves, y_tree = tree_util.tree_flatten(y)
        for leaf in y_leaves:
            _check_output_dtype_revderiv("jacrev", holomorphic, leaf)
        basis, sizes = _std_basis(y_leaves)
        cts = vmap(lambda *b: vjp_fn(tree_util.tree_unflatten(y_tree, list(b))))(*basis)
        per_out = []
        start = 0
        for yl, n in zip(y_leaves, sizes, strict=True):
            def rows(c, x, yl=yl, start=start, n=n):
                if isinstance(c, np.ndarray) and c.dtype == dtypes.float0:
                    # An integer input (allow_int) has float0 cotangents; its Jacobian
                    # block is zeros of the input's dtype, as in JAX.
                    c = device_put(np.zeros(c.shape, get_aval(x).dtype))
                block = slice_in_dim(c, start, start + n, axis=0)
                return _like(reshape(block, get_aval(yl).shape + get_aval(c).shape[1:]), x)
            per_out.append(tree_util.tree_map(rows, cts, tuple(diff)))
            start += n
        out = tree_util.tree_unflatten(y_tree, per_out)
        if isinstance(argnums, int):
            out = tree_util.tree_map(lambda c: c[0], out,
                                     is_leaf=lambda c: isinstance(c, tuple))
        return (out, aux) if has_aux else out
    return jac


def hessian(fun, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Hessian: jacfwd(jacrev(fun))."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux), argnums, has_aux=has_aux)


