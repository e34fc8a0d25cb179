"""``jax.extend.core.primitives``: minijax's primitive objects, under JAX's ``*_p`` names.

Every primitive minijax's ``lax`` defines is exported here by its variable name. minijax
inlines ``jit`` into the enclosing trace and has no call or pmap primitives, so ``jit_p``,
``call_p``, ``closed_call_p`` and ``xla_pmap_p`` are primitives that never appear in a
minijax jaxpr (code that looks for them in a jaxpr finds none).
"""

from __future__ import annotations

from minijax import custom_derivatives, lax
from minijax.ad_checkpoint import remat_p
from minijax.core import Primitive

jit_p = pjit_p = Primitive("jit")
call_p = Primitive("call")
closed_call_p = Primitive("closed_call")
xla_pmap_p = Primitive("xla_pmap")
custom_jvp_call_p = custom_derivatives.custom_jvp_call_p
custom_vjp_call_p = custom_derivatives.custom_vjp_call_p
checkpoint_p = remat_p


globals().update({k: v for k, v in vars(lax).items()
                 if k.endswith("_p") and isinstance(v, Primitive) and k not in globals()})
