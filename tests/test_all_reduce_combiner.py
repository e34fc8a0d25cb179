"""The all-reduce combiner pass: independent compatible all-reduces merge into one
variadic all-reduce; dependent or incompatible ones stay apart; values are unchanged when
run across devices."""

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.backends import get_backend
from minijax.backends.spmd import run_spmd
from minijax.compiler.driver import compile_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.verifier import verify_module
from minijax.compiler.options import CompileOptions
from minijax.compiler.passes.all_reduce_combiner import AllReduceCombiner

_TEXT = """HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
mx { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }
ENTRY e {
  p = f32[4]{0} parameter(0)
  q = f32[2,3]{1,0} parameter(1)
  r1 = f32[4]{0} all-reduce(p), $G, to_apply=add
  r2 = f32[2,3]{1,0} all-reduce(q), $G, to_apply=add
  m = f32[4]{0} all-reduce(p), $G, to_apply=mx
  e = f32[4]{0} exponential(r1)
  r3 = f32[4]{0} all-reduce(e), $G, to_apply=add
  ROOT t = (f32[4]{0}, f32[2,3]{1,0}, f32[4]{0}, f32[4]{0}) tuple(r1, r2, m, r3)
}
""".replace("$G", "channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true")


def _run(module, per_device):
    backend = get_backend("cpu")
    exe, _ = compile_module(module, backend, CompileOptions(backend="cpu"))
    return run_spmd(backend, exe, minijax.devices()[:2], per_device)


def test_combines_independent_all_reduces_only():
    module = parse_module(_TEXT)
    assert AllReduceCombiner().run(module)
    verify_module(module)
    text = module_to_text(module)
    ars = [i for i in module.entry.instructions if i.opcode == "all-reduce"]
    # r1 + r2 combined; the max stays apart (another reduction); r3 depends on r1.
    assert len(ars) == 3
    assert sum(i.shape.is_tuple for i in ars) == 1
    assert module_to_text(parse_module(text)) == text
    assert not AllReduceCombiner().run(parse_module(_APART))


_APART = """HloModule apart
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[4]{0} parameter(0)
  r1 = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={{0,1}}, to_apply=add
  r2 = f32[4]{0} all-reduce(r1), channel_id=1, replica_groups={{0,1}}, to_apply=add
  r3 = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={{0},{1}}, to_apply=add
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(r2, r3)
}
"""


def test_values_unchanged_across_devices():
    rng = np.random.default_rng(0)
    per = [[rng.standard_normal(4).astype(np.float32),
            rng.standard_normal((2, 3)).astype(np.float32)] for _ in range(2)]
    before = _run(parse_module(_TEXT), per)
    combined = parse_module(_TEXT)
    AllReduceCombiner().run(combined)
    after = _run(combined, per)
    for dev_b, dev_a in zip(before, after, strict=True):
        for x, y in zip(dev_b, dev_a, strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    p, q = per[0][0] + per[1][0], per[0][1] + per[1][1]
    np.testing.assert_allclose(np.asarray(after[1][0]), p, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(after[1][1]), q, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(after[0][3]), 2 * np.exp(p), rtol=1e-5)


def test_pmap_gradient_all_reduces_meet_once():
    def step(w, x):
        g = minijax.grad(lambda w: jnp.sum(jnp.tanh(x @ w["a"]) * w["b"]))(w)
        return lax.pmean(g, "d")
    f = minijax.pmap(step, axis_name="d", in_axes=(None, 0))
    w = {"a": np.ones((3, 2), np.float32), "b": np.ones(2, np.float32)}
    f(w, np.ones((2, 4, 3), np.float32))
    (program, *_), = f._programs.values()
    assert program.as_text().count("all-reduce(") == 2         # one per gradient leaf
    ars = [i for i in program.module.entry.instructions if i.opcode == "all-reduce"]
    assert len(ars) == 1 and ars[0].shape.is_tuple
