"""The derivative of a Gamma(a) sample with respect to a, for the reparameterized gradients
of gamma, loggamma, beta, dirichlet and the samplers built on them (as JAX defines them).

A sample x = F^-1(u; a) of the regularized lower incomplete gamma function F(a, x) = P(a, x)
moves with a, for fixed u, by implicit differentiation:

    dx/da = -(dP/da) / (dP/dx),   dP/dx = x^(a-1) e^-x / Gamma(a).

dP/da comes from the power series of P (x <= 1 or x <= a) or from the continued fraction of
Q = 1 - P (otherwise), each carried together with its derivative in a and summed until the
derivative's terms fall below the dtype's epsilon (Cephes' igam/igamc, differentiated term by
term: the formulation JAX uses, so the gradients agree with JAX's to rounding).
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp

__all__ = ["random_gamma_grad"]


def _series(ax_enabled, x, a, eps):
    """-(dP/da) / (dP/dx) from P's series: P = x^a e^-x / Gamma(a + 1) * sum_n c_n."""
    one = jnp.ones_like(a)

    def body(state):
        on, r, c, total, dc, dtotal = state
        r2 = r + 1
        dc2 = dc * (x / r2) - (c * x) / (r2 * r2)
        c2 = c * (x / r2)
        total2, dtotal2 = total + c2, dtotal + dc2
        still = on & (jnp.abs(dc2 / dtotal2) > eps)
        keep = lambda new, old: jnp.where(on, new, old)  # noqa: E731
        return (still, keep(r2, r), keep(c2, c), keep(total2, total), keep(dc2, dc),
                keep(dtotal2, dtotal))

    init = (ax_enabled, a, one, one, jnp.zeros_like(a), jnp.zeros_like(a))
    _, _, _, total, _, dtotal = lax.while_loop(lambda s: jnp.any(s[0]), body, init)
    dlog_prefactor = jnp.log(x) - lax.digamma(a + 1)
    return -(dtotal + total * dlog_prefactor) * x / a


def _continued_fraction(enabled, x, a, eps):
    """-(dP/da) / (dP/dx) = (dQ/da) / (pdf) from Q's continued fraction (Q = 1 - P)."""
    y = 1 - a
    z = x + y + 1
    pkm2, qkm2 = jnp.ones_like(x), x
    pkm1, qkm1 = x + 1, z * x
    ans = pkm1 / qkm1
    zeros = jnp.zeros_like(x)
    dpkm2, dqkm2, dpkm1, dqkm1 = zeros, zeros, zeros, -x
    dans = (dpkm1 - ans * dqkm1) / qkm1
    big = np.asarray(1 / eps, x.dtype)

    def body(state):
        i, state = state[0] + 1, state[1:]
        (on, ans, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans) = state
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        ans2 = jnp.where(nonzero, pk / qk, ans)
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        dans2 = jnp.where(nonzero, (dpk - ans2 * dqk) / qk, dans)
        change = jnp.where(nonzero, jnp.abs(dans2 - dans), jnp.ones_like(dans))
        # rescale the recurrences (all linear in them) before they overflow
        scale = jnp.where(jnp.abs(pk) > big, np.asarray(eps, x.dtype), 1)
        new = (pk * scale, qk * scale, pkm1 * scale, qkm1 * scale, dpkm1 * scale,
               dqkm1 * scale, dpk * scale, dqk * scale)
        old = (pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1)
        kept = tuple(jnp.where(on, n, o) for n, o in zip(new, old))
        pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1 = kept
        still = on & (change > eps)
        return (i, still, jnp.where(on, ans2, ans), jnp.where(on, y, state[2]),
                jnp.where(on, z, state[3]), c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2,
                dpkm1, dqkm1, jnp.where(on, dans2, dans))

    init = (np.int32(0), enabled, ans, y, z, zeros, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2,
            dpkm1, dqkm1, dans)
    out = lax.while_loop(lambda s: (s[0] < 2000) & jnp.any(s[1]), body, init)
    ans, dans = out[2], out[14]
    return (dans + ans * (jnp.log(x) - lax.digamma(a))) * x


def random_gamma_grad(a, x):
    """d x / d a for Gamma(a) samples x (elementwise; nan outside the domain)."""
    a, x = jnp.asarray(a), jnp.asarray(x)
    eps = float(dtypes.finfo(a.dtype).eps)
    is_nan = jnp.isnan(a) | jnp.isnan(x)
    x_zero = x == 0
    bad = (x < 0) | (a <= 0)
    use_cf = (x > 1) & (x > a)
    log_ax = a * jnp.log(x) - x - lax.lgamma(a)
    underflow = log_ax < -np.log(float(dtypes.finfo(a.dtype).max))
    enabled = ~(x_zero | bad | underflow | is_nan)
    out = jnp.where(use_cf, _continued_fraction(enabled & use_cf, x, a, eps),
                    _series(enabled & ~use_cf, x, a, eps))
    out = jnp.where(x_zero, jnp.zeros_like(out), out)
    return jnp.where(bad | is_nan, jnp.full_like(out, np.nan), out)
