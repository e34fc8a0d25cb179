"""Array products built on lax.dot_general: matmul, dot, vdot, vecdot, inner, outer,
tensordot."""

from __future__ import annotations

import operator

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.lax.dot_conv import check_no_out_sharding
from minijax.numpy import util
from minijax.numpy.manipulation import moveaxis
from minijax.numpy.ufuncs import conjugate, multiply
from minijax.numpy.util import check_arraylike


def _dot_general(a, b, contract, batch, precision, preferred_element_type):
    kwargs = {}
    if precision is not None:
        kwargs["precision"] = precision
    if preferred_element_type is not None:
        kwargs["preferred_element_type"] = np.dtype(preferred_element_type)
    return lax.dot_general(a, b, (contract, batch), **kwargs)


def _promote(name, a, b):
    check_arraylike(name, a, b)
    a, b = util.promote_dtypes(a, b)
    if get_aval(a).dtype.kind == "b":
        a = util.convert(a, dtypes.default_int_dtype())
        b = util.convert(b, dtypes.default_int_dtype())
        return a, b, True
    return a, b, False


def _from_bool(out, was_bool):
    if not was_bool:
        return out
    return lax.ne(out, util.full_like_scalar(0, out))


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy's matmul rules (1-D promotion, batch broadcasting)."""
    check_no_out_sharding("matmul", out_sharding)
    a, b, was_bool = _promote("matmul", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        raise ValueError(f"matmul: inputs must be at least 1-dimensional, got shapes {sa} "
                         f"and {sb}")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        a = lax.reshape(a, (1,) + sa)
    if b_vec:
        b = lax.reshape(b, sb + (1,))
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if sa[-1] != sb[-2]:
        raise TypeError(f"matmul: contracting dimensions must match, got shapes "
                        f"{get_aval(a).shape} @ {get_aval(b).shape} (sizes {sa[-1]} and "
                        f"{sb[-2]})")
    batch = util.broadcast_shapes(sa[:-2], sb[:-2])
    a = util.broadcast_to(a, batch + sa[-2:])
    b = util.broadcast_to(b, batch + sb[-2:])
    nb = len(batch)
    out = _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                       precision, preferred_element_type)
    shape = get_aval(out).shape
    if a_vec and b_vec:
        out = lax.reshape(out, shape[:-2])
    elif a_vec:
        out = lax.reshape(out, shape[:-2] + shape[-1:])
    elif b_vec:
        out = lax.reshape(out, shape[:-1])
    return _from_bool(out, was_bool)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """numpy.dot: scalars multiply; otherwise contract a's last axis with b's second-to-last
    (or only) axis."""
    check_no_out_sharding("dot", out_sharding)
    a, b, was_bool = _promote("dot", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        return multiply(a, b)
    cb = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[cb]:
        raise TypeError(f"dot: shapes {sa} and {sb} are not aligned (dim {len(sa) - 1} != "
                        f"dim {cb})")
    out = _dot_general(a, b, ((len(sa) - 1,), (cb,)), ((), ()), precision,
                       preferred_element_type)
    return _from_bool(out, was_bool)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating the first."""
    check_arraylike("vdot", a, b)
    a, b = util.to_array(a), util.to_array(b)
    a = lax.reshape(conjugate(a), (get_aval(a).size,))
    b = lax.reshape(b, (get_aval(b).size,))
    return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contract the last axes of a and b."""
    a, b, was_bool = _promote("inner", a, b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if not sa or not sb:
        return multiply(a, b)
    if sa[-1] != sb[-1]:
        raise TypeError(f"inner: last dimensions must match, got shapes {sa} and {sb}")
    out = _dot_general(a, b, ((len(sa) - 1,), (len(sb) - 1,)), ((), ()), precision,
                       preferred_element_type)
    return _from_bool(out, was_bool)


def outer(a, b, out=None):
    """Outer product of the flattened inputs."""
    check_arraylike("outer", a, b)
    a, b = util.to_array(a), util.to_array(b)
    a = lax.reshape(a, (get_aval(a).size, 1))
    b = lax.reshape(b, (1, get_aval(b).size))
    return multiply(a, b)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Conjugated dot product of vectors along `axis` (batch dimensions broadcast)."""
    x1, x2, was_bool = _promote("vecdot", x1, x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    ax1 = util.canonicalize_axis(axis, len(s1))
    ax2 = util.canonicalize_axis(axis, len(s2))
    x1, x2 = moveaxis(conjugate(x1), ax1, -1), moveaxis(x2, ax2, -1)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    batch = util.broadcast_shapes(s1[:-1], s2[:-1])
    x1 = util.broadcast_to(x1, batch + s1[-1:])
    x2 = util.broadcast_to(x2, batch + s2[-1:])
    nb = len(batch)
    out = _dot_general(x1, x2, ((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb))),
                       precision, preferred_element_type)
    return _from_bool(out, was_bool)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sum products over the given axes (an int N = last N of a with first N of b)."""
    a, b, was_bool = _promote("tensordot", a, b)
    na, nb_ = get_aval(a).ndim, get_aval(b).ndim
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        if n < 0 or n > min(na, nb_):
            raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                            f"({na} and {nb_})")
        ca, cb = tuple(range(na - n, na)), tuple(range(n))
    else:
        if len(axes) != 2:
            raise TypeError("tensordot requires axes to be an int or a pair of sequences")
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError("tensordot requires axes lists to have equal length, got "
                            f"{ax_a} and {ax_b}")
        ca = tuple(util.canonicalize_axis(x, na) for x in ax_a)
        cb = tuple(util.canonicalize_axis(x, nb_) for x in ax_b)
    out = _dot_general(a, b, (ca, cb), ((), ()), precision, preferred_element_type)
    return _from_bool(out, was_bool)
