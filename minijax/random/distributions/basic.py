"""The samplers of minijax.random built on uniform/normal/randint and the control-flow
primitives: permutations and choice, gumbel/categorical, exponential-family transforms,
gamma/beta/dirichlet (Marsaglia-Tsang rejection with lax.while_loop, as JAX), poisson,
multivariate_normal and orthogonal. Re-exported by minijax.random; see its docstring."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np

from minijax import dtypes, lax
from minijax import numpy as jnp
from minijax.core import get_aval
from minijax.custom_derivatives import custom_jvp
from minijax.lax.vmap import vmap
from minijax.random.base import (
    _check_prng_key,
    _check_shape,
    _const,
    _convert,
    _exp,
    _float_dtype,
    _log,
    _log1p,
    _mul_add,
    _random_bits,
    _sample_shape,
    _shape,
    _split,
    _split_list,
    _uniform,
    normal,
    randint,
)
from minijax.random.gamma_grad import random_gamma_grad

# --------------------------------------------------------------------------- permutations


def _concrete_int(x, what: str) -> int:
    try:
        return int(x)
    except Exception as e:
        raise TypeError(f"{what} must be a concrete integer (not a traced value): {x!r}") from e


def permutation(key, x, axis: int = 0, independent: bool = False):
    """A random permutation of range(x) (x an int), or of x's elements along `axis`
    (each slice permuted independently when `independent`)."""
    data, _ = _check_prng_key("permutation", key)
    ndim = np.ndim(x) if not hasattr(x, "ndim") else x.ndim
    if not ndim:
        if jnp.asarray(x).dtype.kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = _concrete_int(x, "argument x of jax.random.permutation()")
        return _shuffle(data, jnp.arange(r), 0)
    x = jnp.asarray(x)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis %= ndim
    if independent or ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis=axis)


def _shuffle(data, x, axis):
    size = math.prod(get_aval(x).shape)
    # Enough rounds of sorting by 32-bit keys that ties are unlikely (JAX's exponent 3).
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        data, sub = _split_list(data)
        sort_keys = _random_bits(sub, 32, get_aval(x).shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def shuffle(key, x, axis: int = 0):
    """Shuffle x along `axis` (deprecated in JAX: use permutation(key, x, axis,
    independent=True))."""
    warnings.warn("jax.random.shuffle is deprecated and will be removed in a future release. "
                  "Use jax.random.permutation with independent=True.", DeprecationWarning,
                  stacklevel=2)
    data, _ = _check_prng_key("shuffle", key)
    x = jnp.asarray(x)
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    return _shuffle(data, x, axis % max(x.ndim, 1))


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None, axis: int = 0,
           mode: str | None = None):
    """Random samples from range(a) (a an int) or from a's entries along `axis`, with or
    without replacement, optionally with probabilities p."""
    data, _ = _check_prng_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError("shape argument of jax.random.choice must be a sequence, got "
                        f"{shape}")
    shape = tuple(shape)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = _concrete_int(a, "The error occurred in jax.random.choice()")
    else:
        if not -arr.ndim <= axis < arr.ndim:
            raise ValueError(f"axis {axis} is out of bounds for array of dimension {arr.ndim}")
        axis %= arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                         f"(size {n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(data, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(data, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis)
    else:
        p_arr = jnp.asarray(p)
        if dtypes.kind(p_arr.dtype) not in "fc":
            p_arr = p_arr.astype(dtypes.default_float_dtype())
        if p_arr.shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as "
                             f"a.shape[axis]. p has shape {p_arr.shape} and a.shape[axis] is "
                             f"{n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - _uniform(data, shape, p_cuml.dtype, 0.0, 1.0))
            ind = jnp.searchsorted(p_cuml, r).astype(dtypes.default_int_dtype())
        else:
            g = gumbel(data, (n_inputs,), dtype=p_arr.dtype, mode=mode) + _log(p_arr)
            ind = lax.top_k(g, n_draws)[1].astype(dtypes.default_int_dtype())
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1:]
    return jnp.reshape(result, out_shape)


# --------------------------------------------------------------------------- simple transforms


def gumbel(key, shape=(), dtype=None, mode: str | None = None):
    """Standard Gumbel samples, -log(-log(u)); mode 'high' spends two uniforms per sample
    for a better tail near u = 1."""
    data, _ = _check_prng_key("gumbel", key)
    dt = _float_dtype(dtype, "gumbel")
    shape = _shape(shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel(data, shape, dt, mode)


def _gumbel(data, shape, dt, mode):
    info = dtypes.finfo(dt)
    if mode == "low":
        u = _uniform(data, shape, dt, _const(info.tiny, dt), _const(1.0, dt))
        return lax.neg(_log(lax.neg(_log(u))))
    if mode == "highest" and dt == np.float32:
        raise NotImplementedError("gumbel(mode='highest') for float32 is not implemented in "
                                  "minijax; use mode='high'")
    u = _uniform(data, (2, *shape), dt, 0.0, 1.0)
    high = lax.reshape(lax.slice_in_dim(u, 0, 1, axis=0), shape)
    low = lax.reshape(lax.slice_in_dim(u, 1, 2, axis=0), shape)
    alt = lax.add(lax.add(high, lax.mul(_const(2.0 ** -info.nmant, dt), low)),
                  _const(info.tiny, dt))
    x = lax.select(lax.ge(high, _const(0.5, dt)), high, alt)
    return lax.neg(_log(lax.neg(_log1p(lax.neg(x)))))


def categorical(key, logits, axis: int = -1, shape=None, replace: bool = True,
                mode: str | None = None):
    """Samples from categorical distributions given by unnormalized log-probabilities
    (the Gumbel-max trick; top-k of perturbed logits without replacement)."""
    data, _ = _check_prng_key("categorical", key)
    logits = jnp.asarray(logits)
    ndim = logits.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape(shape)
        _check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    dt = logits.dtype
    if replace:
        if axis >= 0:
            axis -= ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % ndim, logits.shape[axis])
        g = gumbel(data, (*prefix, *logits_shape), dt, mode=mode)
        return jnp.argmax(g + lax.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
    logits = logits + gumbel(data, logits.shape, dt, mode=mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                         f"of categories ({logits.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
    dims = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dims)


def exponential(key, shape=(), dtype=None):
    """Standard exponential samples, -log1p(-u)."""
    data, _ = _check_prng_key("exponential", key)
    dt = _float_dtype(dtype, "exponential")
    return _exponential(data, _shape(shape), dt)


def _exponential(data, shape, dt):
    u = _uniform(data, shape, dt, 0.0, 1.0)
    return lax.neg(_log1p(lax.neg(u)))


def laplace(key, shape=(), dtype=None):
    """Standard Laplace samples, sign(u) * log1p(-|u|) for u uniform in (-1, 1)."""
    data, _ = _check_prng_key("laplace", key)
    dt = _float_dtype(dtype, "laplace")
    lo = -1.0 + float(dtypes.finfo(dt).epsneg)
    u = _uniform(data, _shape(shape), dt, _const(lo, dt), _const(1.0, dt))
    return lax.mul(lax.sign(u), _log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
    """Standard logistic samples, log(u) - log1p(-u)."""
    data, _ = _check_prng_key("logistic", key)
    dt = _float_dtype(dtype, "logistic")
    u = _uniform(data, _shape(shape), dt, _const(dtypes.finfo(dt).tiny, dt), _const(1.0, dt))
    return lax.sub(_log(u), _log1p(lax.neg(u)))


def cauchy(key, shape=(), dtype=None):
    """Standard Cauchy samples, tan(pi (u - 1/2))."""
    data, _ = _check_prng_key("cauchy", key)
    dt = _float_dtype(dtype, "cauchy")
    u = _uniform(data, _shape(shape), dt, _const(dtypes.finfo(dt).eps, dt), _const(1.0, dt))
    return lax.tan(lax.mul(_const(np.pi, dt), lax.sub(u, _const(0.5, dt))))


# --------------------------------------------------------------------------- gamma family


def _gamma_one(data, alpha, log_space: bool):
    """One Gamma(alpha) sample by Marsaglia and Tsang's method (alpha < 1 boosted by
    U^(1/alpha)), the same sequence of key splits as JAX's."""
    dt = get_aval(alpha).dtype
    zero, one, two, minus_one = (_const(v, dt) for v in (0, 1, 2, -1))
    third = _const(1.0 / 3.0, dt)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, third)
    c = lax.div(third, lax.sqrt(d))

    def cond_fn(state):
        _, x, v, u = state
        # u >= 1 - 0.0331 x**4 (x**2 is the state's x) and the log test, with JAX's
        # compiled code's fused multiply-adds (float32)
        squeeze = lax.ge(u, _mul_add(lax.mul(x, x), _const(-0.0331, dt), one))
        rhs = _mul_add(d, lax.add(lax.sub(one, v), _log(v)), lax.mul(x, _const(0.5, dt)))
        return lax.bitwise_and(squeeze, lax.ge(_log(u), rhs))

    def next_xv(state):
        k, sub = _split_list(state[0])
        x = normal(sub, (), dtype=dt)
        return k, x, _mul_add(x, c, one)

    def body_fn(state):
        k, x_key, u_key = _split_list(state[0], 3)
        _, x, v = lax.while_loop(lambda s: lax.le(s[2], zero), next_xv,
                                 (x_key, zero, minus_one))
        u = _uniform(u_key, (), dt, 0.0, 1.0)
        return k, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    k, sub = _split_list(data)
    _, _, v, _ = lax.while_loop(cond_fn, body_fn, (k, zero, one, two))
    if log_space:
        log_samples = lax.neg(_exponential(sub, (), dt))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(_log(d), _log(v)), log_boost)
    samples = lax.sub(one, _uniform(sub, (), dt, 0.0, 1.0))
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


def _gamma_samples(data, a, log_space: bool):
    """Element i of a (flattened) uses key i of split(key, a.size), as JAX's random_gamma.
    Differentiable in a by implicit differentiation (JAX's reparameterized gradient)."""
    return _gamma_differentiable(log_space, data, a)


@partial(custom_jvp, nondiff_argnums=(0, 1))
def _gamma_differentiable(log_space, data, a):
    shape = a.shape
    n = math.prod(shape)
    if n == 0:
        return jnp.zeros(shape, a.dtype)
    keys = _split(data, n)
    out = vmap(lambda k, al: _gamma_one(k, al, log_space))(keys, jnp.reshape(a, (n,)))
    return jnp.reshape(out, shape)


@_gamma_differentiable.defjvp
def _gamma_jvp(log_space, data, primals, tangents):
    (a,), (da,) = primals, tangents
    out = _gamma_differentiable(log_space, data, a)
    sample = lax.stop_gradient(out)
    if log_space:
        # d log(x) = dx / x; exp(log x) may underflow to 0: use the smallest normal instead
        x = lax.exp(sample)
        x = lax.select(lax.eq(x, lax.full_like(x, 0)),
                       lax.full_like(x, dtypes.finfo(x.dtype).tiny), x)
        grad = lax.div(random_gamma_grad(a, x), x)
    else:
        grad = random_gamma_grad(a, sample)
    return out, lax.mul(da, grad)


def _gamma(name, key, a, shape, dtype, log_space):
    data, _ = _check_prng_key(name, key)
    dt = _float_dtype(dtype, name)
    if shape is None:
        shape = tuple(np.shape(a))
    else:
        shape = _shape(shape)
        _check_shape(name, shape, np.shape(a))
    a = jnp.broadcast_to(_convert(a, dt), shape)
    return _gamma_samples(data, a, log_space)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) samples."""
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key, a, shape=None, dtype=None):
    """Logarithms of Gamma(a, 1) samples (accurate for small a)."""
    return _gamma("loggamma", key, a, shape, dtype, True)


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples from two log-gamma samples."""
    data, _ = _check_prng_key("beta", key)
    dt = _float_dtype(dtype, "beta")
    shape = _sample_shape("beta", shape, np.shape(a), np.shape(b))
    key_a, key_b = _split_list(data)
    a = jnp.broadcast_to(_convert(a, dt), shape)
    b = jnp.broadcast_to(_convert(b, dt), shape)
    log_ga = _gamma_samples(key_a, a, True)
    log_gb = _gamma_samples(key_b, b, True)
    log_max = lax.max(log_ga, log_gb)
    ga = _exp(lax.sub(log_ga, log_max))
    gb = _exp(lax.sub(log_gb, log_max))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples (alpha of shape (..., n)): a softmax of log-gamma samples."""
    data, _ = _check_prng_key("dirichlet", key)
    dt = _float_dtype(dtype, "dirichlet")
    if np.ndim(alpha) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{np.ndim(alpha)}")
    alpha_shape = tuple(np.shape(alpha))
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        shape = _shape(shape)
        _check_shape("dirichlet", shape, alpha_shape[:-1])
    a = jnp.broadcast_to(_convert(alpha, dt), shape + alpha_shape[-1:])
    log_g = _gamma_samples(data, a, True)
    shifted = log_g - jnp.max(log_g, axis=-1, keepdims=True)
    e = _exp(shifted)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) samples: Knuth's method for lam < 10, else transformed rejection
    (Hormann), as JAX."""
    data, _ = _check_prng_key("poisson", key)
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = tuple(np.shape(lam)) if shape is None else _shape(shape)
    lam = _convert(jnp.broadcast_to(lam, shape), np.float32)
    use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, _const(10, np.float32)))
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    lam_rej = lax.select(use_knuth, lax.full_like(lam, 100000.0), lam)
    max_iters = int(np.iinfo(dt).max)
    result = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dt, max_iters),
                        _poisson_rejection(data, lam_rej, shape, dt, max_iters))
    return lax.select(lax.eq(lam, _const(0, np.float32)), lax.full_like(result, 0), result)


def _poisson_knuth(data, lam, shape, dt, max_iters):

    def body(state):
        i, k, rng, log_prod = state
        rng, sub = _split_list(rng)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, _const(1, dt)), k)
        u = _uniform(sub, shape, np.dtype(np.float32), 0.0, 1.0)
        return lax.add(i, _const(1, dt)), k, rng, lax.add(log_prod, _log(u))

    def cond(state):
        i, _, _, log_prod = state
        return lax.bitwise_and(jnp.any(lax.gt(log_prod, lax.neg(lam))),
                               lax.lt(i, _const(max_iters, dt)))

    init = (_const(0, dt), jnp.zeros(shape, dt), data, jnp.zeros(shape, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, _const(1, dt))


def _poisson_rejection(data, lam, shape, dt, max_iters):
    f32 = np.dtype(np.float32)
    log_lam = _log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(state):
        i, k_out, accepted, rng = state
        rng, sub0, sub1 = _split_list(rng, 3)
        u = _uniform(sub0, shape, f32, 0.0, 1.0) - 0.5
        v = _uniform(sub1, shape, f32, 0.0, 1.0)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = _log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return (lax.add(i, _const(1, dt)), lax.select(accept, k, k_out), accepted | accept,
                rng)

    def cond(state):
        i, _, accepted, _ = state
        return lax.bitwise_and(jnp.any(~accepted), lax.lt(i, _const(max_iters, dt)))

    init = (_const(0, dt), jnp.full(shape, -1.0, f32), jnp.zeros(shape, bool), data)
    return _convert(lax.while_loop(cond, body, init)[1], dt)


# --------------------------------------------------------------------------- linear algebra


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method: str = "cholesky"):
    """Multivariate normal samples mean + factor @ z, factor from cov by 'cholesky', 'svd'
    or 'eigh'; result shape `shape + mean.shape[-1:]`."""
    data, _ = _check_prng_key("multivariate_normal", key)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = jnp.asarray(mean), jnp.asarray(cov)
    common = dtypes.to_inexact(jnp.result_type(mean, cov))
    mean, cov = mean.astype(common), cov.astype(common)
    dt = mean.dtype if dtype is None else _float_dtype(dtype, "multivariate_normal")
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov.shape}.")
    shape = _sample_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = normal(data, shape + mean.shape[-1:], dt)
    return mean + jnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n: int, shape=(), dtype=None, m: int | None = None):
    """Random n x m matrices with orthonormal columns or rows (Haar measure for m = n),
    from the QR decomposition of a normal matrix with sign-corrected R diagonal."""
    data, _ = _check_prng_key("orthogonal", key)
    dt = _float_dtype(dtype, "orthogonal") if dtype is None or \
        np.dtype(dtype).kind != "c" else dtypes.canonicalize_dtype(dtype)
    n = _concrete_int(n, "The error occurred in jax.random.orthogonal()")
    m = n if m is None else _concrete_int(m, "The error occurred in jax.random.orthogonal()")
    shape = _shape(shape)
    z = normal(data, (*shape, max(n, m), min(n, m)), dt)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


__all__ = ["beta", "categorical", "cauchy", "choice", "dirichlet", "exponential",
           "gamma", "gumbel", "laplace", "loggamma", "logistic", "multivariate_normal",
           "orthogonal", "permutation", "poisson", "shuffle"]
