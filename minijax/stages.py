"""``jax.stages``: the objects of jit's ahead-of-time stages.

``jit(f)`` is a :class:`Wrapped`; ``.lower(*args)`` gives a :class:`Lowered` (HLO before
optimization) and ``.compile()`` a :class:`Compiled`. minijax's ``jit(f).trace(*args)``
returns the ClosedJaxpr that jit traces, so :data:`Traced` names that type.
"""

from typing import Any

from minijax.api_jit import Compiled, JitWrapped, Lowered
from minijax.core import ClosedJaxpr

Wrapped = JitWrapped
Traced = ClosedJaxpr
CompilerOptions = dict[str, Any]

__all__ = ["Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
