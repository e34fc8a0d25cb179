"""minijax.scipy.special (JAX's `jax.scipy.special`): logsumexp, error functions, gamma
functions and their relatives, xlogy/xlog1py, expit/logit, the normal distribution's ndtr,
ndtri and log_ndtr, the incomplete gamma/beta, Bessel, exponential-integral and
hypergeometric functions, in numerically stable forms with JAX's gradient conventions.

The shared helpers and the elementary functions live in `basic`; each family of the rest
has its own module (`incomplete`, `series`, `gamma_family`, `integrals`, `hyper`), which imports
`basic` at its top."""

from minijax.scipy.special.basic import (
    digamma,
    entr,
    erf,
    erfc,
    erfinv,
    expit,
    gammaln,
    log_ndtr,
    logit,
    logsumexp,
    ndtr,
    ndtri,
    xlog1py,
    xlogy,
)
from minijax.scipy.special.gamma_family import (
    bernoulli,
    beta,
    boxcox,
    boxcox1p,
    comb,
    factorial,
    gamma,
    gammasgn,
    kl_div,
    log_softmax,
    loggamma,
    poch,
    polygamma,
    rel_entr,
    softmax,
    zeta,
)
from minijax.scipy.special.hyper import bessel_jn, hyp1f1, hyp2f1
from minijax.scipy.special.incomplete import (
    betainc,
    betaln,
    gammainc,
    gammaincc,
    i0,
    i0e,
    i1,
    i1e,
    multigammaln,
)
from minijax.scipy.special.integrals import (
    dawsn,
    erfcx,
    exp1,
    expn,
    fresnel,
    owens_t,
    sici,
    spence,
    wofz,
)
from minijax.scipy.special.series import expi

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammaln", "log_ndtr",
           "logit", "logsumexp", "ndtr", "ndtri", "xlog1py", "xlogy"]
__all__ += ["betainc", "betaln", "expi", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e",
            "multigammaln"]
__all__ += ["bernoulli", "beta", "boxcox", "boxcox1p", "comb", "factorial", "gamma",
            "gammasgn", "kl_div", "log_softmax", "loggamma", "poch", "polygamma", "rel_entr",
            "softmax", "zeta"]
__all__ += ["dawsn", "erfcx", "exp1", "expn", "fresnel", "owens_t", "sici", "spence", "wofz"]
__all__ += ["bessel_jn", "hyp1f1", "hyp2f1"]
