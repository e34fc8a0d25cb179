"""minijax.extend: the library-author surface of ``jax.extend`` on minijax's own core.

- :mod:`minijax.extend.core`: ``Primitive`` (``def_impl``, ``def_abstract_eval``, ``bind``),
  jaxpr types, ``primitives`` (minijax's primitive objects), aval helpers;
- :mod:`minijax.extend.linear_util`: ``wrap_init`` and ``WrappedFun``;
- :mod:`minijax.extend.source_info_util`: the user's source location of an operation.

Rules for a new primitive go in the interpreters' tables, as in JAX:
``minijax.interpreters.ad.primitive_jvps[p]``, ``ad.primitive_transposes[p]``,
``minijax.interpreters.batching.primitive_batchers[p]`` (minijax's convention
``rule(trace, vals, dims, **params)``; JAX's ``rule(vals, dims, **params)`` is accepted
through ``jax.interpreters.batching`` under :mod:`minijax.compat`) and
``minijax.interpreters.mlir.register_lowering(p, mlir.lower_fun(f))``.
"""

from minijax.extend import core, linear_util, source_info_util

__all__ = ["core", "linear_util", "source_info_util"]
