"""`lax.composite`: a function marked as one named operation (StableHLO's composite).

The decomposition is traced into a jaxpr and bound as the `composite` primitive with the
op's name, version and keyword attributes. Evaluation and lowering run the decomposition
(minijax has no backend kernels that replace a composite). As in JAX, composites have no
JVP, transpose or batching rules: wrap them in custom_jvp / custom_vjp to differentiate.
"""

from __future__ import annotations

import functools

import numpy as np

from minijax import tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import Primitive, Tracer
from minijax.errors import UnexpectedTracerError
from minijax.interpreters import ad
from minijax.lax.control_flow_common import (
    avals_of,
    call_jaxpr_abstract_eval,
    call_jaxpr_impl,
    call_jaxpr_lower,
    trace_user_fun,
)

__all__ = ["composite", "composite_p"]


class _HashableArray:
    """A NumPy array attribute, hashable by value (primitive parameters are cache keys)."""

    def __init__(self, value: np.ndarray):
        self.value = value

    def _key(self):
        return (self.value.shape, self.value.dtype.str, self.value.tobytes())

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, _HashableArray) and self._key() == other._key()

    def __repr__(self):
        return repr(self.value)


def composite(decomposition, name: str, version: int = 0):
    """Mark `decomposition` as the composite operation `name` (of `version`): calling the
    result traces `decomposition(*args, **attributes)` into one `composite` equation whose
    keyword arguments are static attributes (Python or NumPy values, not traced arrays)."""

    @functools.wraps(decomposition)
    def call(*args, **kwargs):
        flat, in_tree = tree_util.tree_flatten(args)
        if any(isinstance(v, Tracer) for v in tree_util.tree_leaves(kwargs)):
            raise UnexpectedTracerError(
                f"Found a JAX Tracer as an attribute in the decomposition for the composite "
                f"op '{name}'. This means that the decomposition function closes over a "
                "value that is involved in a JAX transformation. Any values that aren't "
                "explicitly known at compile time must be explicitly passed as arguments to "
                "the composite.\n\nNote: If you are passing jax arrays as attributes, use "
                "numpy arrays instead.")
        jaxpr, consts, out_tree = trace_user_fun(
            functools.partial(decomposition, **kwargs), in_tree, avals_of(flat),
            f"composite {name}")
        attributes = []
        for k, v in kwargs.items():
            leaves, treedef = tree_util.tree_flatten(v)
            attributes.append((k, tuple(_HashableArray(x) if isinstance(x, np.ndarray) else x
                                        for x in leaves), treedef))
        outs = composite_p.bind(*consts, *flat, call_jaxpr=jaxpr, name=name,
                                attributes=tuple(attributes), version=int(version))
        return tree_util.tree_unflatten(out_tree, outs)

    return call


composite_p = Primitive("composite")
composite_p.multiple_results = True


def _jvp(primals, tangents, **_):
    raise ValueError("JVP rule for composite not implemented. You can use `jax.custom_jvp` "
                     "to add support. See "
                     "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


composite_p.def_abstract_eval(call_jaxpr_abstract_eval)
composite_p.def_impl(call_jaxpr_impl)
register_lowering(composite_p, call_jaxpr_lower)
ad.primitive_jvps[composite_p] = _jvp
