"""``jax.scipy.stats`` for the import hook: ``norm`` and ``gaussian_kde``."""

from minijax.compat.fallback.scipy_stats import norm
from minijax.compat.fallback.scipy_stats.kde import gaussian_kde

__all__ = ["gaussian_kde", "norm"]
