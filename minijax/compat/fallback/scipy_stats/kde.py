"""``jax.scipy.stats.gaussian_kde``: a Gaussian kernel density estimate (SciPy's definition:
Scott's or Silverman's bandwidth factor times the weighted data covariance)."""

from __future__ import annotations

import math

from minijax import numpy as jnp
from minijax import random
from minijax.scipy.special import logsumexp

__all__ = ["gaussian_kde"]


class gaussian_kde:  # noqa: N801 - SciPy's and JAX's name
    """KDE of ``dataset`` (shape ``(d, n)`` or ``(n,)``) with optional ``weights``."""

    def __init__(self, dataset, bw_method=None, weights=None):
        data = jnp.atleast_2d(jnp.asarray(dataset))
        data = data.astype(jnp.result_type(data, 1.0))
        self.d, self.n = data.shape
        self.dataset = data
        if weights is None:
            w = jnp.full((self.n,), 1.0 / self.n, data.dtype)
        else:
            w = jnp.asarray(weights, data.dtype)
            w = w / jnp.sum(w)
        self.weights = w
        self.neff = 1.0 / jnp.sum(w ** 2)
        if bw_method is None or bw_method == "scott":
            factor = self.neff ** (-1.0 / (self.d + 4))
        elif bw_method == "silverman":
            factor = (self.neff * (self.d + 2) / 4.0) ** (-1.0 / (self.d + 4))
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            factor = jnp.asarray(bw_method, data.dtype)
        self.factor = factor
        mean = data @ w
        centered = data - mean[:, None]
        cov = (centered * w) @ centered.T / (1.0 - jnp.sum(w ** 2))
        self.covariance = cov * factor ** 2
        self._chol = jnp.linalg.cholesky(self.covariance)

    def logpdf(self, points):
        """Log density at ``points`` (shape ``(d, m)`` or ``(m,)``)."""
        x = jnp.atleast_2d(jnp.asarray(points, self.dataset.dtype))
        if x.shape[0] != self.d:
            x = x.reshape(self.d, -1)
        diff = x[:, :, None] - self.dataset[:, None, :]          # d, m, n
        inv_l = jnp.linalg.inv(self._chol)
        z = jnp.einsum("ij,jmn->imn", inv_l, diff)
        log_norm = (jnp.sum(jnp.log(jnp.diagonal(self._chol)))
                    + 0.5 * self.d * math.log(2 * math.pi))
        return logsumexp(-0.5 * jnp.sum(z * z, axis=0) - log_norm, axis=1, b=self.weights)

    def evaluate(self, points):
        """Density at ``points``."""
        return jnp.exp(self.logpdf(points))

    __call__ = pdf = evaluate

    def resample(self, key, shape=()):
        """Draw samples: a data point (by weight) plus Gaussian kernel noise; shape
        ``(d,) + shape``."""
        k1, k2 = random.split(key)
        idx = random.choice(k1, self.n, shape=shape, p=self.weights)
        noise = random.normal(k2, (self.d,) + tuple(shape), self.dataset.dtype)
        return self.dataset[:, idx] + jnp.tensordot(self._chol, noise, axes=1)
