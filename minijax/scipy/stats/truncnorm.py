"""The truncated normal distribution (as jax.scipy.stats.truncnorm): the standard normal
restricted to [a, b] (in standardized units), then shifted by loc and scaled by scale."""

from __future__ import annotations

import math

import numpy as np

from minijax import numpy as jnp
from minijax.scipy.special import log_ndtr
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _log_diff(log_hi, log_lo):
    """log(e^log_hi - e^log_lo) for log_hi >= log_lo."""
    return log_hi + jnp.log(-jnp.expm1(log_lo - log_hi))


def _log_gauss_mass(a, b, logs_a, logs_b):
    """log(ndtr(b) - ndtr(a)) for a <= b, accurate in both tails and for wide intervals;
    logs_v = (log_ndtr(v), log_ndtr(-v))."""
    (la, l_na), (lb, l_nb) = logs_a, logs_b
    left = b <= 0   # both bounds in the left tail: ndtr(b) - ndtr(a)
    right = a > 0   # both in the right tail: ndtr(-a) - ndtr(-b)
    in_left = _log_diff(lb, la)
    in_right = _log_diff(l_na, l_nb)
    middle = jnp.log1p(-jnp.exp(la) - jnp.exp(l_nb))
    return jnp.where(left, in_left, jnp.where(right, in_right, middle))


def _logs(*values):
    """(log_ndtr(v), log_ndtr(-v)) for each value, from one log_ndtr call (a small graph)."""
    both = log_ndtr(jnp.stack([s * v for v in values for s in (1, -1)]))
    return [(both[2 * i], both[2 * i + 1]) for i in range(len(values))]


def _parts(name, x, a, b, loc, scale):
    x, a, b, loc, scale = promote(name, x, a, b, loc, scale)
    return (x - loc) / scale, a, b, scale


def logpdf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal density (-inf outside [a, b])."""
    z, a, b, scale = _parts("truncnorm.logpdf", x, a, b, loc, scale)
    mass = _log_gauss_mass(a, b, *_logs(a, b))
    out = -0.5 * z * z - 0.5 * math.log(2 * math.pi) - jnp.log(scale) - mass
    return jnp.where((z < a) | (z > b), -np.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    """The truncated normal density."""
    return jnp.exp(logpdf(x, a, b, loc, scale))


def _log_tail(name, x, a, b, loc, scale, upper: bool):
    """Log of the truncated normal cdf (upper=False) or survival function (upper=True)."""
    z, a, b, _ = _parts(name, x, a, b, loc, scale)
    inside = (z > a) & (z < b)
    zc = jnp.where(inside, z, (a + b) / 2)
    logs_a, logs_b, logs_z = _logs(a, b, zc)
    total = _log_gauss_mass(a, b, logs_a, logs_b)
    if upper:
        out = _log_gauss_mass(zc, b, logs_z, logs_b) - total
        return jnp.where(z <= a, 0, jnp.where(z >= b, -np.inf, out))
    out = _log_gauss_mass(a, zc, logs_a, logs_z) - total
    return jnp.where(z <= a, -np.inf, jnp.where(z >= b, 0, out))


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal cdf."""
    return _log_tail("truncnorm.logcdf", x, a, b, loc, scale, upper=False)


def cdf(x, a, b, loc=0, scale=1):
    """The truncated normal cumulative distribution function."""
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """Log of the truncated normal survival function."""
    return _log_tail("truncnorm.logsf", x, a, b, loc, scale, upper=True)


def sf(x, a, b, loc=0, scale=1):
    """The truncated normal survival function."""
    return jnp.exp(logsf(x, a, b, loc, scale))
