"""lax's special functions (jax.lax.zeta, polygamma, igamma, igammac, betainc,
bessel_i0e, bessel_i1e): the elementwise primitives JAX exposes in lax, here thin aliases of
minijax.scipy.special's implementations (one implementation, with its derivatives).

Unlike scipy.special these take lax's argument rules: operands of one dtype, no promotion of
integers beyond what the scipy functions already do.
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.lax.structural import convert_element_type
from minijax.numpy import asarray
from minijax.scipy import special_gamma, special_incomplete


def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q)^-x, elementwise."""
    return special_gamma.zeta(x, q)


def polygamma(m, x):
    """The m-th derivative of the digamma function at x, elementwise (m integral-valued)."""
    m = asarray(m)
    if dtypes.is_inexact(m.dtype):  # lax takes m in x's float dtype; scipy wants integers
        m = convert_element_type(m, np.int32)
    return special_gamma.polygamma(m, x)


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x), elementwise."""
    return special_incomplete.gammainc(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), elementwise."""
    return special_incomplete.gammaincc(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), elementwise."""
    return special_incomplete.betainc(a, b, x)


def bessel_i0e(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    return special_incomplete.i0e(x)


def bessel_i1e(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    return special_incomplete.i1e(x)
