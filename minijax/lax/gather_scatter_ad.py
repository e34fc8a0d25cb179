"""JVP and transpose rules of the scatter family (the primitives are in gather_scatter.py).

- scatter-add is linear: its transpose reads the cotangent back with a gather.
- scatter with unique indices is linear in (operand, updates); with repeated indices its JVP
  tags each update window with an id to find which update won each position (as JAX does),
  then expresses primal and tangent as scatter-adds, so no scatter transpose is needed.
- scatter-mul is linear in the operand; its updates derivative needs unique indices.
- scatter-min/max: the tangent at a position is the average of the tangents of all the
  values (operand and updates) equal to the result there.
"""

from __future__ import annotations

import numpy as np

from minijax import core, dtypes
from minijax.array import Array
from minijax.core import get_aval
from minijax.interpreters import ad
from minijax.lax import elementwise, elementwise_int
from minijax.lax.elementwise import mul
from minijax.lax.gather_scatter import (
    GatherScatterMode,
    gather_p,
    inverse_gather_dnums,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)
from minijax.lax.structural import broadcast_in_dim, full, iota, reshape


def _zeros(aval):
    return core.zeros_like_aval(aval)


def _readback(x, indices, updates_shape, dn, mode, indices_are_sorted):
    """gather(x) at the windows a scatter with these indices writes (0 where dropped)."""
    gdn, sizes = inverse_gather_dnums(dn, updates_shape, get_aval(x).ndim)
    fill = 0 if mode is GatherScatterMode.FILL_OR_DROP else None
    return gather_p.bind(x, indices, dimension_numbers=gdn, slice_sizes=sizes,
                         unique_indices=False, indices_are_sorted=indices_are_sorted,
                         mode=mode, fill_value=fill)


def _scatter_add_jvp(primals, tangents, **params):
    (x, i, u), (gx, _, gu) = primals, tangents
    out = scatter_add_p.bind(x, i, u, **params)
    if type(gx) is ad.Zero and type(gu) is ad.Zero:
        return out, ad.Zero.from_value(out)
    return out, scatter_add_p.bind(ad.instantiate_zeros(gx), i, ad.instantiate_zeros(gu),
                                   **params)


def _scatter_add_transpose(ct, x, i, u, *, dimension_numbers, indices_are_sorted,
                           unique_indices, mode):
    u_aval = u.aval if ad.is_undefined_primal(u) else get_aval(u)
    x_aval = x.aval if ad.is_undefined_primal(x) else get_aval(x)
    if type(ct) is ad.Zero:
        return [ad.Zero(x_aval) if ad.is_undefined_primal(x) else None, None,
                ad.Zero(u_aval) if ad.is_undefined_primal(u) else None]
    ct_u = (_readback(ct, i, u_aval.shape, dimension_numbers, mode, indices_are_sorted)
            if ad.is_undefined_primal(u) else None)
    return [ct if ad.is_undefined_primal(x) else None, None, ct_u]


ad.primitive_jvps[scatter_add_p] = _scatter_add_jvp
ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode):
    (x, i, u), (gx, _, gu) = primals, tangents
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    if type(gx) is ad.Zero and type(gu) is ad.Zero:
        out = scatter_p.bind(x, i, u, **params)
        return out, ad.Zero.from_value(out)
    gx, gu = ad.instantiate_zeros(gx), ad.instantiate_zeros(gu)
    if unique_indices:
        return scatter_p.bind(x, i, u, **params), scatter_p.bind(gx, i, gu, **params)
    # Repeated indices: which update wins is unspecified, so tag each update window with a
    # positive id, scatter the ids, read back which id won each window, and keep only the
    # winners (and the operand where nothing was written). Primal and tangent then come
    # from the same scatter-add, so they always agree on the winner.
    dn, u_aval = dimension_numbers, get_aval(u)
    ids_shape = [1 if d in dn.update_window_dims else n for d, n in enumerate(u_aval.shape)]
    n_ids = int(np.prod(ids_shape, dtype=np.int64))
    id_dtype = np.dtype("uint32") if n_ids < 2 ** 31 - 1 else dtypes.canonicalize_dtype("uint64")
    ids = elementwise.add(reshape(iota(id_dtype, n_ids), ids_shape), Array(np.asarray(1, id_dtype)))
    ids = broadcast_in_dim(ids, u_aval.shape, tuple(range(u_aval.ndim)))
    scattered = scatter_p.bind(full(get_aval(x).shape, 0, id_dtype), i, ids, **params)
    won = elementwise_int.eq(ids, _readback(scattered, i, u_aval.shape, dn, mode,
                                            indices_are_sorted))
    untouched = elementwise_int.eq(scattered, full(get_aval(x).shape, 0, id_dtype))

    def keep(mask, v):
        return elementwise_int.select_n(mask, _zeros(get_aval(v)), v)
    out = scatter_add_p.bind(keep(untouched, x), i, keep(won, u), **params)
    tangent = scatter_add_p.bind(keep(untouched, gx), i, keep(won, gu), **params)
    return out, tangent


def _scatter_transpose(ct, x, i, u, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode):
    if not unique_indices:
        raise NotImplementedError("scatter transpose is only implemented where "
                                  "unique_indices=True")
    u_aval = u.aval if ad.is_undefined_primal(u) else get_aval(u)
    x_aval = x.aval if ad.is_undefined_primal(x) else get_aval(x)
    if type(ct) is ad.Zero:
        return [ad.Zero(x_aval) if ad.is_undefined_primal(x) else None, None,
                ad.Zero(u_aval) if ad.is_undefined_primal(u) else None]
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    ct_x = (scatter_p.bind(ct, i, _zeros(u_aval), **params)
            if ad.is_undefined_primal(x) else None)
    ct_u = (_readback(ct, i, u_aval.shape, dimension_numbers, mode, indices_are_sorted)
            if ad.is_undefined_primal(u) else None)
    return [ct_x, None, ct_u]


ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose


def _scatter_mul_jvp_updates(g, x, i, u, **params):
    if not params["unique_indices"]:
        raise NotImplementedError("scatter_mul gradients with respect to updates are only "
                                  "implemented if unique_indices=True")
    return mul(x, scatter_add_p.bind(_zeros(get_aval(x)), i, g, **params))


def _scatter_mul_transpose(ct, x, i, u, **params):
    if ad.is_undefined_primal(u):
        raise NotImplementedError("scatter_mul transpose with respect to updates is not "
                                  "linear and not implemented")
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval), None, None]
    return [scatter_mul_p.bind(ct, i, u, **params), None, None]


ad.defjvp(scatter_mul_p, lambda g, x, i, u, **params: scatter_mul_p.bind(g, i, u, **params),
          None, _scatter_mul_jvp_updates)
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremal_jvp(prim, primals, tangents, *, dimension_numbers,
                          indices_are_sorted, unique_indices, mode):
    """Tangent of scatter-min/max: the average of the tangents of all values (operand and
    updates) that equal the result at each position, as JAX does for ties."""
    (x, i, u), (gx, _, gu) = primals, tangents
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    out = prim.bind(x, i, u, **params)
    if type(gx) is ad.Zero and type(gu) is ad.Zero:
        return out, ad.Zero.from_value(out)
    gx, gu = ad.instantiate_zeros(gx), ad.instantiate_zeros(gu)
    x_aval, u_aval = get_aval(x), get_aval(u)
    u_won = elementwise_int.eq(u, _readback(out, i, u_aval.shape, dimension_numbers, mode,
                                indices_are_sorted))
    x_won = elementwise_int.eq(x, out)
    zeros_x, zeros_u = _zeros(x_aval), _zeros(u_aval)
    one_x, one_u = full(x_aval.shape, 1, x_aval.dtype), full(u_aval.shape, 1, u_aval.dtype)
    select_n = elementwise_int.select_n
    count = elementwise.add(select_n(x_won, zeros_x, one_x),
                            scatter_add_p.bind(zeros_x, i, select_n(u_won, zeros_u, one_u),
                                               **params))
    total = elementwise.add(select_n(x_won, zeros_x, gx),
                            scatter_add_p.bind(zeros_x, i, select_n(u_won, zeros_u, gu), **params))
    return out, elementwise.div(total, elementwise.max(count, one_x))


for _prim in (scatter_min_p, scatter_max_p):
    ad.primitive_jvps[_prim] = (
        lambda primals, tangents, _p=_prim, **params: _scatter_extremal_jvp(
            _p, primals, tangents, **params))
