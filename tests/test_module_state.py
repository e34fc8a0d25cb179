"""hlo.Module's state is declared in hlo/ir.py: compiling leaves no undeclared attributes."""

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax.compiler.hlo.ir import Module
from minijax.compiler.hlo.parser import parse_module

DECLARED = {"name", "computations", "entry", "attrs", "num_user_params", "donated_params",
            "fusion_log", "pass_timings", "buffer_assignment", "cache_digest"}


def test_compiled_module_has_only_declared_state():
    f = minijax.jit(lambda x, y: jax_softmax(x) @ y, donate_argnums=(0,))
    x = np.random.RandomState(0).randn(4, 8).astype(np.float32)
    # The (4, 8) output can take x's donated buffer (JAX pairs donations with outputs).
    compiled = f.lower(x, np.eye(8, dtype=np.float32)).compile()
    module = compiled._entry.module
    assert set(vars(module)) <= DECLARED, set(vars(module)) - DECLARED
    for name in DECLARED - {"name", "computations", "entry", "attrs"}:
        assert hasattr(Module, name), name  # a class-level default: old pickles load too
    assert module.donated_params == {0} and module.num_user_params == 2
    assert module.buffer_assignment is not None and module.pass_timings
    assert any("fus" in line for line in module.fusion_log)


def jax_softmax(x):
    e = jnp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_parsed_module_defaults():
    m = parse_module("HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n")
    assert m.donated_params == set() and m.fusion_log == [] and m.buffer_assignment is None
    assert m.cache_digest is None and m.num_user_params is None
    m.fusion_log.append("x")
    assert Module.fusion_log == []  # instances never share the class default
