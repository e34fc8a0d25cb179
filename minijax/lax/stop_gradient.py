"""stop_gradient: an identity primitive with a zero derivative (jax.lax.stop_gradient)."""

from __future__ import annotations

from minijax import dtypes, tree_util
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import Primitive, get_aval
from minijax.interpreters import ad, batching
from minijax.lax.control_flow_common import as_array


def stop_gradient(x):
    """The identity on values, with zero derivative (applies to every leaf of a pytree)."""
    def stop(leaf):
        if dtypes.is_inexact(get_aval(leaf).dtype):
            return stop_gradient_p.bind(leaf)
        return leaf
    return tree_util.tree_map(stop, x)


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_abstract_eval(lambda x: x)
stop_gradient_p.def_impl(lambda x: as_array(x, get_aval(x)))
ad.defjvp_zero(stop_gradient_p)
batching.primitive_batchers[stop_gradient_p] = \
    lambda trace, vals, dims: (stop_gradient_p.bind(vals[0]), dims[0])
register_lowering(stop_gradient_p, lambda ctx, x: x)
