"""JVP rules of reduce_max, reduce_min and reduce_prod. They need elementwise ops, padding
and cumprod, whose modules sit above reductions.py (elementwise transposes use reduce_sum),
so they are registered here (lax/__init__ imports this module).
"""

from __future__ import annotations

import numpy as np

from minijax import dtypes
from minijax.core import get_aval
from minijax.interpreters import ad
from minijax.lax import elementwise, elementwise_int, slicing
from minijax.lax.cumulative import cumprod
from minijax.lax.reductions import reduce_max_p, reduce_min_p, reduce_prod_p, reduce_sum_p
from minijax.lax.structural import broadcast_in_dim, convert_element_type, reshape, transpose


def _chooser_jvp(prim):
    # The tangent is the mean of the tangents at the locations that attain the extremum,
    # as in JAX (so ties share the derivative equally).
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        aval = get_aval(x)
        if type(t) is ad.Zero or not dtypes.is_inexact(aval.dtype):
            return ans, ad.Zero.from_value(ans)
        kept = tuple(i for i in range(aval.ndim) if i not in axes)
        location = elementwise_int.eq(x, broadcast_in_dim(ans, aval.shape, kept))
        location = convert_element_type(location, aval.dtype)
        counts = reduce_sum_p.bind(location, axes=axes)
        picked = reduce_sum_p.bind(elementwise.mul(t, location), axes=axes)
        return ans, elementwise.div(picked, counts)
    return rule


ad.primitive_jvps[reduce_max_p] = _chooser_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _chooser_jvp(reduce_min_p)


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod(x) = sum_i t_i * prod_{j != i} x_j. The products of all other elements are
    # exclusive prefix products times exclusive suffix products, which stay correct when
    # some x_j are zero (unlike prod(x) / x_i).
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    if type(t) is ad.Zero:
        return ans, ad.Zero.from_value(ans)
    aval = get_aval(x)
    kept = [i for i in range(aval.ndim) if i not in axes]
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    m = int(np.prod([aval.shape[k] for k in kept], dtype=np.int64))
    if n == 0 or m == 0:
        return ans, ad.Zero.from_value(ans)
    perm = tuple(axes) + tuple(kept)
    x2 = reshape(transpose(x, perm), (n, m))
    t2 = reshape(transpose(t, perm), (n, m))
    one = np.ones((), aval.dtype)
    before = slicing.pad(cumprod(x2, 0), one, ((1, -1, 0), (0, 0, 0)))
    after = slicing.pad(cumprod(x2, 0, reverse=True), one, ((-1, 1, 0), (0, 0, 0)))
    tangent = reduce_sum_p.bind(elementwise.mul(t2, elementwise.mul(before, after)), axes=(0,))
    return ans, reshape(tangent, get_aval(ans).shape)


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp
