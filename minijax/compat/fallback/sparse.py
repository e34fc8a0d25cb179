"""``jax.experimental.sparse``: :class:`BCOO`, a sparse array in coordinate format.

minijax has no sparse kernels: a BCOO keeps ``data`` (nse values) and ``indices``
(nse x ndim) and computes products through :meth:`BCOO.todense`. It is a pytree (``data``
and ``indices`` are its children), so it passes through jit, grad and vmap.
"""

from __future__ import annotations

import numpy as np

from minijax import numpy as jnp
from minijax.tree_util import register_pytree_node_class

__all__ = ["BCOO", "bcoo_fromdense", "bcoo_todense"]


@register_pytree_node_class
class BCOO:
    """``BCOO((data, indices), shape=shape)``: ``dense[tuple(indices[i])] += data[i]``."""

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        self.data, self.indices = (jnp.asarray(a) for a in args)
        self.shape = tuple(shape)
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices

    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    nse = property(lambda self: self.data.shape[0])

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=jnp.int32):
        """The nonzero entries of ``mat`` (a concrete array)."""
        dense = np.asarray(mat)
        idx = np.argwhere(dense != 0)
        if nse is not None:
            idx = np.concatenate([idx, np.zeros((max(nse - len(idx), 0), dense.ndim), int)])
            idx = idx[:nse]
        data = jnp.asarray(mat)[tuple(idx.T)] if len(idx) else jnp.zeros(0, dense.dtype)
        return cls((data, jnp.asarray(idx, index_dtype)), shape=dense.shape,
                   indices_sorted=True, unique_indices=nse is None)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=jnp.int32):
        """From a ``scipy.sparse`` matrix (its COO entries)."""
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1)
        return cls((jnp.asarray(coo.data), jnp.asarray(indices, index_dtype)),
                   shape=coo.shape)

    def todense(self):
        """The dense array (duplicate indices add up)."""
        out = jnp.zeros(self.shape, self.dtype)
        return out.at[tuple(self.indices[:, i] for i in range(self.ndim))].add(self.data)

    def __matmul__(self, other):
        return self.todense() @ other

    def __rmatmul__(self, other):
        return other @ self.todense()

    def tree_flatten(self):
        return (self.data, self.indices), (self.shape, self.indices_sorted, self.unique_indices)

    @classmethod
    def tree_unflatten(cls, aux, children):
        shape, indices_sorted, unique_indices = aux
        return cls(children, shape=shape, indices_sorted=indices_sorted,
                   unique_indices=unique_indices)

    def __repr__(self):
        return f"BCOO({self.dtype}{list(self.shape)}, nse={self.nse})"


def bcoo_fromdense(mat, *, nse=None, index_dtype=jnp.int32):
    """:meth:`BCOO.fromdense`."""
    return BCOO.fromdense(mat, nse=nse, index_dtype=index_dtype)


def bcoo_todense(mat):
    """:meth:`BCOO.todense`."""
    return mat.todense()
