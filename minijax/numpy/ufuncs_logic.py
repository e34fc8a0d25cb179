"""Comparisons, logical and bitwise functions, floating-point classification, isclose and
friends, nan_to_num, where/select/piecewise."""

from __future__ import annotations

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.numpy import util
from minijax.numpy.indexing import nonzero
from minijax.numpy.ufuncs import _c, _kind, _select, imag
from minijax.numpy.util import check_arraylike, promote_args, promote_args_numeric, to_array


def _bool_fn(*names):
    return util.lax_fn(*names)


def _compare(name, lax_name):
    def wrapper(x1, x2, /):
        x1, x2 = promote_args(name, x1, x2)
        return getattr(lax, lax_name)(x1, x2)
    wrapper.__name__ = name
    wrapper.__doc__ = f"Elementwise {name} comparison (returns booleans)."
    return wrapper


equal = _compare("equal", "eq")
not_equal = _compare("not_equal", "ne")
less = _compare("less", "lt")
less_equal = _compare("less_equal", "le")
greater = _compare("greater", "gt")
greater_equal = _compare("greater_equal", "ge")


def _to_bool(x):
    x = to_array(x)
    if _kind(x) == "b":
        return x
    return lax.ne(x, _c(0, x))


def _logical(name, *lax_names):
    def wrapper(x1, x2, /):
        check_arraylike(name, x1, x2)
        a, b = util.broadcast_arrays_for_op(_to_bool(x1), _to_bool(x2))
        return _bool_fn(*lax_names)(a, b)
    wrapper.__name__ = name
    wrapper.__doc__ = f"Elementwise {name} of the truth values."
    return wrapper


logical_and = _logical("logical_and", "bitwise_and", "and_")
logical_or = _logical("logical_or", "bitwise_or", "or_")
logical_xor = _logical("logical_xor", "bitwise_xor", "xor")


def logical_not(x, /):
    """Elementwise NOT of the truth values."""
    check_arraylike("logical_not", x)
    return _bool_fn("bitwise_not", "not_")(_to_bool(x))


def _bitwise(name, *lax_names):
    def wrapper(x1, x2, /):
        x1, x2 = promote_args(name, x1, x2)
        util.check_integer_or_bool(name, x1)
        return _bool_fn(*lax_names)(x1, x2)
    wrapper.__name__ = name
    wrapper.__doc__ = f"Elementwise {name} of integers or booleans."
    return wrapper


bitwise_and = _bitwise("bitwise_and", "bitwise_and", "and_")
bitwise_or = _bitwise("bitwise_or", "bitwise_or", "or_")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", "xor")


def bitwise_not(x, /):
    """Elementwise bitwise NOT (logical NOT for booleans)."""
    check_arraylike("bitwise_not", x)
    x = to_array(x)
    util.check_integer_or_bool("bitwise_not", x)
    return _bool_fn("bitwise_not", "not_")(x)


invert = bitwise_invert = bitwise_not


def left_shift(x1, x2, /):
    """x1 << x2 (booleans promote to the default integer type, as in JAX)."""
    x1, x2 = promote_args_numeric("left_shift", x1, x2)
    util.check_integer_or_bool("left_shift", x1)
    return lax.shift_left(x1, x2)


def right_shift(x1, x2, /):
    """x1 >> x2 (arithmetic for signed integers; booleans promote to the default integer)."""
    x1, x2 = promote_args_numeric("right_shift", x1, x2)
    util.check_integer_or_bool("right_shift", x1)
    if _kind(x1) == "i":
        return lax.shift_right_arithmetic(x1, x2)
    return lax.shift_right_logical(x1, x2)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


# --------------------------------------------------------------------------- classification


def _false_like(x):
    return util.broadcast_to(util.convert(False, dtypes.bool_), get_aval(x).shape)


def _true_like(x):
    return util.broadcast_to(util.convert(True, dtypes.bool_), get_aval(x).shape)


def isnan(x, /):
    """True where x is NaN."""
    check_arraylike("isnan", x)
    x = to_array(x)
    if _kind(x) not in "fc":
        return _false_like(x)
    return lax.ne(x, x)


def isinf(x, /):
    """True where x is +inf or -inf."""
    check_arraylike("isinf", x)
    x = to_array(x)
    kind = _kind(x)
    if kind == "c":
        return logical_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    if kind != "f":
        return _false_like(x)
    # A strongly typed inf, as JAX's (the result is not weak).
    return lax.eq(lax.abs(x), util.convert(np.inf, get_aval(x).dtype, False))


def isfinite(x, /):
    """True where x is neither infinite nor NaN."""
    check_arraylike("isfinite", x)
    x = to_array(x)
    kind = _kind(x)
    if kind == "c":
        return logical_and(isfinite(lax.real(x)), isfinite(lax.imag(x)))
    if kind != "f":
        return _true_like(x)
    fn = getattr(lax, "is_finite", None)
    if fn is not None:
        return fn(x)
    return lax.lt(lax.abs(x), _c(np.inf, x))


def isposinf(x, /):
    """True where x is +inf."""
    check_arraylike("isposinf", x)
    x = to_array(x)
    return lax.eq(x, _c(np.inf, x)) if _kind(x) == "f" else _false_like(x)


def isneginf(x, /):
    """True where x is -inf."""
    check_arraylike("isneginf", x)
    x = to_array(x)
    return lax.eq(x, _c(-np.inf, x)) if _kind(x) == "f" else _false_like(x)


def isreal(x):
    """True where the imaginary part is zero."""
    return equal(imag(x), 0)


def iscomplex(x):
    """True where the imaginary part is nonzero."""
    return not_equal(imag(x), 0)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, with infinities equal only to themselves."""
    a, b = util.promote_args_inexact("isclose", a, b)
    real_dt = dtypes.real_dtype(get_aval(a).dtype)
    rt = util.convert(rtol, real_dt, False)
    at = util.convert(atol, real_dt, False)
    diff = lax.abs(lax.sub(a, b))
    out = lax.le(diff, lax.add(at, lax.mul(rt, lax.abs(b))))
    a_inf, b_inf = isinf(a), isinf(b)
    any_inf = logical_or(a_inf, b_inf)
    both_inf = logical_and(a_inf, b_inf)
    out = logical_and(out, logical_not(any_inf))
    out = logical_or(out, logical_and(both_inf, lax.eq(a, b)))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(a), isnan(b)))
    else:
        out = logical_and(out, logical_not(logical_or(isnan(a), isnan(b))))
    return out


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by `nan`, +inf by `posinf` and -inf by `neginf` (default: finite
    extremes of the dtype)."""
    check_arraylike("nan_to_num", x)
    x = to_array(x)
    kind = _kind(x)
    if kind in "iub":
        return x
    if kind == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(get_aval(x).dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    shape = get_aval(x).shape
    out = _select(isnan(x), util.broadcast_to(_c(nan, x), shape), x)
    out = _select(isposinf(x), util.broadcast_to(_c(posinf, x), shape), out)
    return _select(isneginf(x), util.broadcast_to(_c(neginf, x), shape), out)


# --------------------------------------------------------------------------- selection


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """Elements of x where condition holds, else of y; with one argument, nonzero()."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided "
                         f"to jax.numpy.where, got {x} and {y}.")
    check_arraylike("where", condition, x, y)
    cond = _to_bool(condition)
    x, y = util.promote_dtypes(x, y)
    shape = util.broadcast_shapes(*(get_aval(v).shape for v in (cond, x, y)))
    cond, x, y = (util.broadcast_to(v, shape) for v in (cond, x, y))
    return lax.select_n(cond, y, x)


def select(condlist, choicelist, default=0):
    """choicelist[i] where condlist[i] holds (first match wins), else `default`."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        if _kind(to_array(cond)) != "b":
            raise TypeError(f"condlist must contain boolean arrays, got {get_aval(cond).dtype}")
        out = where(cond, choice, out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate funclist[i](x) (or the constant funclist[i]) where condlist[i] holds; a
    final extra function applies where no condition holds."""
    check_arraylike("piecewise", x)
    x = to_array(x)
    if util.is_arraylike(condlist) and get_aval(to_array(condlist)).ndim <= get_aval(x).ndim:
        condlist = [condlist]
    n = len(condlist)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are "
                         f"expected, got {len(funclist)}")
    out = util.broadcast_to(_c(0, x), get_aval(x).shape)

    def value(f):
        v = f(x, *args, **kw) if callable(f) else f
        return util.convert(util.broadcast_to(to_array(v), get_aval(x).shape)
                            if util.ndim_of(v) else v, get_aval(x).dtype, False)
    conds = [_to_bool(c) for c in condlist]
    if len(funclist) == n + 1:
        anyc = conds[0] if conds else _false_like(x)
        for c in conds[1:]:
            anyc = logical_or(anyc, c)
        out = where(logical_not(anyc), value(funclist[-1]), out)
    for c, f in zip(conds, funclist[:n]):
        out = where(c, value(f), out)
    return util.convert(out, get_aval(x).dtype, False)
