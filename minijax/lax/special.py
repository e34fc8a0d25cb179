"""lax's special functions (jax.lax.zeta, polygamma, igamma, igammac, betainc, bessel_i0e,
bessel_i1e).

minijax implements them once, in minijax.scipy.special (jnp/lax code that jit, vmap and grad
go through). lax sits below jnp and scipy, so it cannot import them: those modules register
their implementations here with `register_special_function` when they are imported, which
`import minijax` always does.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.core import get_aval
from minijax.lax import elementwise
from minijax.lax.elementwise_int import bitwise_and, eq, select
from minijax.lax.elementwise_math import is_finite
from minijax.lax.shape_helpers import asarray
from minijax.lax.structural import broadcast_in_dim, convert_element_type

_IMPLS: dict = {}


def register_special_function(name: str, fn) -> None:
    """Make `fn` the implementation behind `lax.<name>`."""
    _IMPLS[name] = fn


def _impl(name: str):
    try:
        return _IMPLS[name]
    except KeyError:
        raise NotImplementedError(
            f"lax.{name}: no implementation registered; it is provided by "
            "minijax.scipy.special, which `import minijax` imports") from None


def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q)^-x, elementwise."""
    return _impl("zeta")(x, q)


def polygamma(m, x):
    """The m-th derivative of the digamma function at x, elementwise (m integral-valued)."""
    m = asarray(m)
    if not dtypes.is_inexact(get_aval(m).dtype):
        return _impl("polygamma")(m, x)
    # lax takes m in x's dtype, scipy wants ints: a non-integral m (0.5, NaN) is NaN in JAX,
    # not the polygamma of m truncated.
    out = _impl("polygamma")(convert_element_type(m, np.int32), x)
    integral = bitwise_and(eq(elementwise.floor(m), m), is_finite(m))
    shape = get_aval(out).shape
    if get_aval(integral).shape != shape:
        integral = broadcast_in_dim(integral, shape, ())
    return select(integral, out, elementwise.full_like(out, np.nan))


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x), elementwise."""
    return _impl("igamma")(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), elementwise."""
    return _impl("igammac")(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), elementwise."""
    return _impl("betainc")(a, b, x)


def bessel_i0e(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    return _impl("bessel_i0e")(x)


def bessel_i1e(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    return _impl("bessel_i1e")(x)
