"""JVP rules of elementwise.py primitives that need comparisons, select, log or complex
parts: rem, pow, max, min and abs. Those ops live in modules that import elementwise.py, so
these rules are registered here, above all of them (lax/__init__ imports this module).
"""

from __future__ import annotations

from minijax.core import get_aval
from minijax.interpreters import ad
from minijax.lax.elementwise import (
    _brcast,
    _const,
    _ones,
    _zeros,
    abs_p,
    ceil,
    div,
    floor,
    full_like,
    max_p,
    min_p,
    mul,
    neg,
    pow,
    pow_p,
    rem_p,
    sub,
)
from minijax.lax.elementwise_complex import conj, real
from minijax.lax.elementwise_int import eq, ge, lt, select
from minijax.lax.elementwise_math import log
from minijax.lax.structural import convert_element_type


def _replace_zero(x):
    return select(eq(x, _const(x, 0)), _ones(x), x)

def _trunc(x):
    return select(lt(x, _const(x, 0)), ceil(x), floor(x))


ad.defjvp(rem_p, lambda t, x, y: _brcast(t, y),
          lambda t, x, y: mul(neg(t), _trunc(div(x, y))))

def _pow_jvp_lhs(t, ans, x, y):
    y_dtype = get_aval(y).dtype
    if y_dtype.kind not in "iu":
        # JAX's rule: y * x ** (y - 1), so d/dx x ** 0. at x = 0 is 0 * inf = NaN.
        return mul(t, mul(y, pow(x, sub(y, _const(y, 1)))))
    # An integer exponent 0 has the derivative 0 everywhere (x ** 0 == 1), as in JAX.
    y = convert_element_type(y, get_aval(x).dtype)
    shaped = _brcast(y, x)
    jac = select(eq(shaped, _const(y, 0)), _zeros(shaped),
                 mul(y, pow(x, sub(y, _const(y, 1)))))
    return mul(t, jac)


def _pow_jvp_rhs(t, ans, x, y):
    if get_aval(y).dtype.kind in "iu":
        return ad.Zero.from_value(ans)
    return mul(t, mul(log(_replace_zero(x)), ans))


def _log(x):
    return log(x)


ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)

def _balanced_eq(x, z, y):
    # Where x and y tie at the extremum each gets half of the tangent (as JAX).
    return div(select(eq(x, z), _ones(z), _zeros(z)),
               select(eq(y, z), full_like(z, 2), _ones(z)))


for _prim in (max_p, min_p):
    ad.defjvp2(_prim, lambda t, ans, x, y: mul(t, _balanced_eq(x, ans, y)),
               lambda t, ans, x, y: mul(t, _balanced_eq(y, ans, x)))

def _abs_jvp(t, ans, x):
    if get_aval(x).dtype.kind == "c":
        denom = _replace_zero(convert_element_type(ans, get_aval(x).dtype))
        return real(mul(t, div(conj(x), denom)))
    return select(ge(x, _const(x, 0)), t, neg(t))


ad.defjvp2(abs_p, _abs_jvp)
