"""The chi-squared distribution (as jax.scipy.stats.chi2): gamma(df / 2, scale=2 scale)."""

from __future__ import annotations

from minijax.scipy.stats import gamma
from minijax.scipy.stats._util import promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _args(name, x, df, loc, scale):
    x, df, loc, scale = promote(name, x, df, loc, scale)
    return x, df / 2, loc, 2 * scale


def logpdf(x, df, loc=0, scale=1):
    """Log of the chi-squared density with `df` degrees of freedom."""
    return gamma.logpdf(*_args("chi2.logpdf", x, df, loc, scale))


def pdf(x, df, loc=0, scale=1):
    """The chi-squared density."""
    return gamma.pdf(*_args("chi2.pdf", x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    """The chi-squared cumulative distribution function."""
    return gamma.cdf(*_args("chi2.cdf", x, df, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """Log of the chi-squared cdf."""
    return gamma.logcdf(*_args("chi2.logcdf", x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """The chi-squared survival function."""
    return gamma.sf(*_args("chi2.sf", x, df, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """Log of the chi-squared survival function."""
    return gamma.logsf(*_args("chi2.logsf", x, df, loc, scale))
