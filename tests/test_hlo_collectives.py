"""XLA's collective instructions in HLO text: printing and parsing (round trip), JAX's own
dumps of pmap/shard_map programs (tests/data/jax_spmd/, written by make_jax_spmd_hlo.py),
and the compiled dumps run on 4 minijax CPU devices against NumPy (and live JAX when
installed)."""

import os
import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.backends import get_backend
from minijax.backends.spmd import run_spmd
from minijax.compiler.driver import compile_module
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.evaluator.collectives import groups_text, parse_groups
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.verifier import verify_module
from minijax.compiler.options import CompileOptions

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
sys.path.insert(0, DATA)
import make_jax_spmd_hlo  # noqa: E402

NAMES = ["pmap_collectives", "pmap_collectives_compiled", "shard_map", "shard_map_compiled"]


def _text(name):
    with open(os.path.join(DATA, "jax_spmd", f"{name}.hlo")) as f:
        return f.read()


@pytest.mark.parametrize("name", NAMES)
def test_jax_dumps_parse_verify_and_round_trip(name):
    module = parse_module(_text(name))
    verify_module(module)
    printed = module_to_text(module)
    assert module_to_text(parse_module(printed)) == printed
    for op in ("all-reduce", "all-gather", "partition-id"):
        assert op in printed
    assert "replica_groups={{" in printed


def test_replica_group_forms():
    assert parse_groups("{{0,1},{2,3}}") == ((0, 1), (2, 3))
    assert parse_groups("{}") == ()
    assert parse_groups("[2,2]<=[4]") == ((0, 1), (2, 3))
    assert parse_groups("[2,2]<=[2,2]T(1,0)") == ((0, 2), (1, 3))
    assert groups_text(((0, 2), (1, 3))) == "{{0,2},{1,3}}"


def _run_compiled(name, per_device):
    module = parse_module(_text(name))
    backend = get_backend("cpu")
    exe, _ = compile_module(module, backend, CompileOptions(backend="cpu"))
    return run_spmd(backend, exe, minijax.devices()[:4], per_device)


def test_jax_compiled_pmap_program_runs_on_4_devices():
    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    outs = _run_compiled("pmap_collectives_compiled", [[x[i:i + 1]] for i in range(4)])
    got = [np.stack([np.asarray(dev[k]) for dev in outs]) for k in range(10)]
    rows = [x[i].reshape(4, 2) for i in range(4)]
    want = [np.broadcast_to(x.sum(0), x.shape), np.broadcast_to(x.max(0), x.shape),
            np.broadcast_to(x, (4, 4, 8)), np.broadcast_to(x.reshape(32), (4, 32)),
            np.stack([np.tile(x, 4).sum(0)[8 * i:8 * i + 8] for i in range(4)]),
            np.roll(x, 1, axis=0),
            np.stack([np.stack([rows[j][i] for j in range(4)]) for i in range(4)]),
            np.arange(4), np.broadcast_to(x.min(0), x.shape),
            np.broadcast_to(x.mean(0), x.shape)]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-6, err_msg=f"out{k}")
    # minijax's own pmap of the same program gives the same values.
    mine = minijax.pmap(lambda v: make_jax_spmd_hlo.pmap_collectives(lax, jnp, v),
                        axis_name="i")(x)
    for k, (g, w) in enumerate(zip(mine, want, strict=True)):
        np.testing.assert_allclose(np.asarray(g).reshape(w.shape), w, rtol=1e-6,
                                   err_msg=f"minijax out{k}")


def test_jax_compiled_shard_map_program_runs_on_4_devices():
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    # mesh (x, y) = (2, 2): device 2*i + j holds a[x=i, y=j] and b[y=j].
    per = [[a[4 * i:4 * i + 4, 4 * j:4 * j + 4], b[4 * j:4 * j + 4]]
           for i in range(2) for j in range(2)]
    outs = _run_compiled("shard_map_compiled", per)
    for d, dev in enumerate(outs):
        np.testing.assert_allclose(np.asarray(dev[0]), a @ b, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(np.asarray(dev[1]).reshape(-1), [d // 2])


_ONE = """HloModule one
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  p = f32[3]{0} parameter(0)
  r = f32[3]{0} all-reduce(p), replica_groups={{0}}, to_apply=add
  g = f32[3]{0} all-gather(r), replica_groups={}, dimensions={0}
  c = f32[3]{0} collective-permute(g), source_target_pairs={{0,0}}
  i = u32[] partition-id()
  ROOT t = (f32[3]{0}, u32[]) tuple(c, i)
}
"""


def test_single_device_evaluator_semantics_of_collectives():
    x = np.arange(3.0, dtype=np.float32)
    c, i = evaluate_module(parse_module(_ONE), [x])   # no multi-device run: one participant
    np.testing.assert_array_equal(c, x)
    assert i == 0 and i.dtype == np.uint32
    module = parse_module(_text("pmap_collectives_compiled"))
    with pytest.raises(Exception, match=r"replica groups \{\{0,1,2,3\}\} but runs on one"):
        evaluate_module(module, [np.zeros((1, 8), np.float32)])


def test_minijax_collective_text_round_trips():
    f = minijax.pmap(lambda v: (lax.psum(v, "i"), lax.psum_scatter(v, "i", tiled=True),
                                lax.all_to_all(v, "i", 0, 0, tiled=True),
                                lax.ppermute(v, "i", [(0, 1), (1, 0)])), axis_name="i")
    f(np.ones((2, 4), np.float32))
    (program, *_), = f._programs.values()
    for module in (program.module, program.optimized):
        text = module_to_text(module)
        assert module_to_text(parse_module(text)) == text
    assert "reduce-scatter(" in text and "all-to-all(" in text


def test_live_jax_pmap_matches_minijax_when_installed():
    jax = pytest.importorskip("jax")
    if jax.device_count() < 2:
        pytest.skip("JAX has one device in this process (set XLA_FLAGS before importing it)")
    x = np.arange(16.0, dtype=np.float32).reshape(2, 8)

    def f(lx, v):
        return lx.psum(v, "i"), lx.all_gather(v, "i"), lx.axis_index("i")
    want = jax.pmap(lambda v: f(jax.lax, v), axis_name="i")(x)
    got = minijax.pmap(lambda v: f(lax, v), axis_name="i")(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


_SELECT_MAX = """HloModule selmax
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  gt = pred[] compare(a, b), direction=GT
  ROOT m = f32[] select(gt, a, b)
}
ENTRY e {
  p = f32[5]{0} parameter(0)
  r = f32[5]{0} all-reduce(p), replica_groups={{0,1,2}}, to_apply=mx
  ROOT t = (f32[5]{0}) tuple(r)
}
"""


def test_all_reduce_with_a_general_reduction_computation():
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(5).astype(np.float32) for _ in range(3)]
    backend = get_backend("cpu")
    exe, _ = compile_module(parse_module(_SELECT_MAX), backend, CompileOptions(backend="cpu"))
    outs = run_spmd(backend, exe, minijax.devices()[:3], [[x] for x in xs])
    for dev in outs:
        np.testing.assert_array_equal(np.asarray(dev[0]), np.max(xs, axis=0))
