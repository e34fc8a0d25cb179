"""Gaussian kernel density estimation (as jax.scipy.stats.gaussian_kde)."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax import random, tree_util
from minijax.scipy import special
from minijax.scipy.stats import multivariate_normal, norm

__all__ = ["gaussian_kde"]


class gaussian_kde:  # noqa: N801 (scipy's and JAX's name)
    """A Gaussian kernel density estimate of `dataset` (shape (d, n), or (n,) for d = 1),
    with Scott's (default) or Silverman's bandwidth rule, a scalar factor or a callable
    `bw_method(kde)`, and optional `weights`. A pytree, so it can cross jit and vmap."""

    def __init__(self, dataset, bw_method=None, weights=None):
        data = jnp.atleast_2d(jnp.asarray(dataset))
        if jnp.issubdtype(data.dtype, jnp.complexfloating):
            raise NotImplementedError("gaussian_kde: complex data is not supported")
        if not jnp.issubdtype(data.dtype, jnp.inexact):
            data = data.astype(jnp.result_type(data.dtype, jnp.float32))
        d, n = data.shape
        if n <= 1:
            raise ValueError(f"gaussian_kde: the dataset needs more than one point; got "
                             f"shape {data.shape}")
        if weights is not None:
            w = jnp.atleast_1d(jnp.asarray(weights)).astype(data.dtype)
            if w.ndim != 1 or w.shape[0] != n:
                raise ValueError(f"gaussian_kde: weights must be one value per point ({n}); "
                                 f"got shape {w.shape}")
            w = w / jnp.sum(w)
        else:
            w = jnp.full((n,), 1.0 / n, data.dtype)
        self.dataset, self.weights = data, w
        self.d, self.n = d, n
        self.neff = 1 / jnp.sum(w * w)
        if bw_method is None or bw_method == "scott":
            factor = self.neff ** (-1.0 / (d + 4))
        elif bw_method == "silverman":
            factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif callable(bw_method):
            factor = bw_method(self)
        elif jnp.ndim(bw_method) == 0 and not isinstance(bw_method, str):
            factor = jnp.asarray(bw_method, data.dtype)
        else:
            raise ValueError("gaussian_kde: bw_method should be 'scott', 'silverman', a "
                             "scalar or a callable")
        self.factor = factor
        cov = jnp.atleast_2d(jnp.cov(data, rowvar=True, bias=False, aweights=w))
        self.covariance = cov * factor ** 2
        self.inv_cov = jnp.linalg.inv(self.covariance)

    def _rebuild(self, dataset, weights, factor, covariance, inv_cov, neff, d, n):
        self.dataset, self.weights, self.factor = dataset, weights, factor
        self.covariance, self.inv_cov, self.neff, self.d, self.n = (covariance, inv_cov,
                                                                    neff, d, n)
        return self

    def _points(self, points):
        pts = jnp.atleast_2d(jnp.asarray(points)).astype(self.dataset.dtype)
        if pts.shape[0] != self.d:
            if pts.shape == (1, self.d):
                pts = pts.T
            else:
                raise ValueError(f"gaussian_kde: points have dimension {pts.shape[0]}, the "
                                 f"dataset has dimension {self.d}")
        return pts

    def logpdf(self, points):
        """Log of the estimated density at `points` (shape (d, m))."""
        pts = self._points(points)
        diff = pts.T[:, None, :] - self.dataset.T[None, :, :]          # (m, n, d)
        logk = multivariate_normal.logpdf(diff, jnp.zeros((self.d,), pts.dtype),
                                          self.covariance)
        return special.logsumexp(logk, axis=1, b=self.weights[None, :])

    def evaluate(self, points):
        """The estimated density at `points`."""
        return jnp.exp(self.logpdf(points))

    __call__ = pdf = evaluate

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the Gaussian N(mean, cov)."""
        mean = jnp.atleast_1d(jnp.asarray(mean)).astype(self.dataset.dtype)
        cov = jnp.atleast_2d(jnp.asarray(cov)).astype(self.dataset.dtype)
        if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
            raise ValueError(f"gaussian_kde.integrate_gaussian: mean must have shape "
                             f"({self.d},) and cov ({self.d}, {self.d})")
        vals = multivariate_normal.pdf(self.dataset.T, mean, self.covariance + cov)
        return jnp.sum(vals * self.weights)

    def integrate_box_1d(self, low, high):
        """The integral of a 1-d estimate between `low` and `high`."""
        if self.d != 1:
            raise ValueError("gaussian_kde.integrate_box_1d: the dataset must be 1-d")
        sd = jnp.sqrt(self.covariance[0, 0])
        lo = norm.cdf((low - self.dataset[0]) / sd)
        hi = norm.cdf((high - self.dataset[0]) / sd)
        return jnp.sum(self.weights * (hi - lo))

    def integrate_kde(self, other):
        """The integral of the product of this estimate and `other`."""
        if other.d != self.d:
            raise ValueError("gaussian_kde.integrate_kde: the estimates' dimensions differ")
        cov = self.covariance + other.covariance
        diff = self.dataset.T[:, None, :] - other.dataset.T[None, :, :]
        vals = multivariate_normal.pdf(diff, jnp.zeros((self.d,), diff.dtype), cov)
        return jnp.sum(vals * self.weights[:, None] * other.weights[None, :])

    def resample(self, key, shape=()):
        """Draw `shape` samples (returned with shape (d,) + shape) from the estimate."""
        shape = tuple(shape)
        k1, k2 = random.split(key)
        idx = random.choice(k1, self.n, shape=shape, p=self.weights)
        noise = random.multivariate_normal(k2, jnp.zeros((self.d,), self.dataset.dtype),
                                           self.covariance, shape=shape)
        return jnp.moveaxis(self.dataset.T[idx] + noise, -1, 0)

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not implemented (as in JAX): the box integral needs an adaptive cubature."""
        raise NotImplementedError("gaussian_kde.integrate_box is not implemented (as in JAX)")

    def set_bandwidth(self, bw_method=None):
        """Not implemented (as in JAX): build a new gaussian_kde instead."""
        raise NotImplementedError("gaussian_kde.set_bandwidth is not implemented (as in JAX); "
                                  "create a new gaussian_kde with the bandwidth")


def _flatten(kde):
    return ((kde.dataset, kde.weights, kde.factor, kde.covariance, kde.inv_cov, kde.neff),
            (kde.d, kde.n))


def _unflatten(aux, children):
    return gaussian_kde.__new__(gaussian_kde)._rebuild(*children, *aux)


tree_util.register_pytree_node(gaussian_kde, _flatten, _unflatten)
