"""The chi-squared distribution (as jax.scipy.stats.chi2): gamma(df / 2, scale=2 scale)."""

from __future__ import annotations

from minijax.scipy.stats import gamma
from minijax.scipy.stats._util import named, promote

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _via_gamma(fname: str, doc: str):
    """chi2.`fname` as gamma.`fname` with shape df / 2 and scale 2 scale."""
    qualname, of_gamma = f"chi2.{fname}", getattr(gamma, fname)

    def fn(x, df, loc=0, scale=1):
        x, df, loc, scale = promote(qualname, x, df, loc, scale)
        return of_gamma(x, df / 2, loc, 2 * scale)
    return named(fn, qualname, doc)


logpdf = _via_gamma("logpdf", "Log of the chi-squared density with `df` degrees of freedom.")
pdf = _via_gamma("pdf", "The chi-squared density.")
cdf = _via_gamma("cdf", "The chi-squared cumulative distribution function.")
logcdf = _via_gamma("logcdf", "Log of the chi-squared cdf.")
sf = _via_gamma("sf", "The chi-squared survival function.")
logsf = _via_gamma("logsf", "Log of the chi-squared survival function.")
