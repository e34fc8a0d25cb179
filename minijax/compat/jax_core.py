"""``jax.core`` under the import hook: minijax's core with the names of ``jax.extend.core``
and the few older ``jax.core`` helpers that libraries still call."""

from minijax.core import *  # noqa: F403 - this module stands for JAX's core
from minijax.extend.core import *  # noqa: F403
from minijax.extend.core import jaxpr_as_fun

jaxpr_as_fn = jaxpr_as_fun
Atom = object  # a jaxpr operand: Var | Literal (only used in annotations)


def raise_to_shaped(aval, weak_type=None):
    """minijax has only ShapedArray avals: ``aval`` itself (weak type updated if given)."""
    return aval if weak_type is None else aval.update(weak_type=weak_type)
