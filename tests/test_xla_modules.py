"""Real XLA modules (JAX 0.10.2, before and after XLA:CPU's passes) run by minijax.

Fixtures in tests/data/xla_modules/ (written by `campaign.py gen` + `campaign.py fixtures`):
NAME.KIND.hlo as XLA printed it, NAME.args.npz and JAX's outputs NAME.expected.npz. Each is
parsed, verified, evaluated and replayed with `minijax.tools.run_hlo` on the CPU backend;
both must give JAX's values. They cover what the campaign found broken: XLA's `bitcast`
between element types and between layouts (`f32[9,5]{0,1} bitcast(f32[5,9]{1,0})` is a
transpose), tuple-rooted loop fusions, `copy`s that change layout, XLA's Philox
`rng-bit-generator`, and XLA:CPU's TopK and LAPACK custom calls. With jax importable,
more programs are lowered live. The bitcast/layout rules are also checked on generated
modules against a NumPy model of physical memory.
"""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.verifier import verify_module
from minijax.compiler.passes.call_inliner import CallInliner
from minijax.compiler.passes.layout_normalization import LayoutNormalization

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "xla_modules")
sys.path.insert(0, HERE)
import campaign  # noqa: E402

FIXTURES = sorted(p for p in glob.glob(os.path.join(HERE, "*.hlo"))
                  if not p.endswith(".synthetic.hlo"))


def _fixture_id(path):
    return os.path.basename(path)[: -len(".hlo")]


@pytest.mark.parametrize("path", FIXTURES, ids=_fixture_id)
def test_xla_module_matches_jax(path, tmp_path):
    name = os.path.basename(path).split(".")[0]
    args = campaign.load_arrays(os.path.join(HERE, f"{name}.args.npz"), "arg")
    expected = campaign.load_arrays(os.path.join(HERE, f"{name}.expected.npz"), "out")
    assert campaign.run_one(path, args, expected, str(tmp_path)) == []


def test_fixture_set_is_complete():
    assert len(FIXTURES) == len(campaign.FIXTURES)


# ----------------------------------------------------------------- bitcast and layouts


def _physical_bitcast(x: np.ndarray, src_m2m, out_dims, out_m2m, out_dtype=None):
    """NumPy model: x's elements in memory order (src layout), read back as out's layout."""
    flat = np.transpose(x, tuple(reversed(src_m2m))).reshape(-1)
    if out_dtype is not None:
        flat = flat.view(out_dtype)
    major = tuple(reversed(out_m2m))
    arr = flat.reshape(tuple(out_dims[d] for d in major))
    return np.transpose(arr, np.argsort(major))


def _layout(m2m):
    return "{" + ",".join(map(str, m2m)) + "}"


def _bitcast_module(dims, src_m2m, out_dims, out_m2m, src_type="f32", out_type="f32"):
    return f"""HloModule bitcast_layouts
ENTRY main {{
  p = {src_type}[{",".join(map(str, dims))}]{_layout(src_m2m)} parameter(0)
  b = {out_type}[{",".join(map(str, out_dims))}]{_layout(out_m2m)} bitcast(p)
  ROOT n = {out_type}[{",".join(map(str, out_dims))}]{_layout(out_m2m)} negate(b)
}}
"""


@st.composite
def _bitcasts(draw):
    rank = draw(st.integers(1, 3))
    dims = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    src = draw(st.permutations(range(rank)))
    size = int(np.prod(dims))
    factors = [d for d in range(1, size + 1) if size % d == 0]
    out_rank = draw(st.integers(1, 3))
    out_dims = []
    rest = size
    for _ in range(out_rank - 1):
        d = draw(st.sampled_from([f for f in factors if rest % f == 0]))
        out_dims.append(d)
        rest //= d
    out_dims.append(rest)
    out = draw(st.permutations(range(out_rank)))
    return dims, list(src), out_dims, list(out)


@settings(max_examples=40, deadline=None)
@given(_bitcasts())
def test_bitcast_between_layouts_is_physical_reinterpretation(case):
    dims, src, out_dims, out = case
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims) + 1
    want = -_physical_bitcast(x, src, out_dims, out)
    module = parse_module(_bitcast_module(dims, src, out_dims, out))
    np.testing.assert_array_equal(evaluate_module(module, [x])[0], want)
    # After layout normalization no layout is left and the value is unchanged.
    LayoutNormalization().run(module)
    verify_module(module)
    assert all(i.shape.layout is None for c in module.computations for i in c.instructions)
    assert not any(i.opcode == "bitcast" for i in module.entry.instructions)
    np.testing.assert_array_equal(evaluate_module(module, [x])[0], want)


@pytest.mark.parametrize("case", [
    ((5, 9), (1, 0), (9, 5), (0, 1), "f32", "f32"),        # a transpose, as XLA:CPU emits
    ((2, 3, 4), (0, 2, 1), (4, 6), (1, 0), "f32", "f32"),
    ((3, 4), (0, 1), (4, 3), (0, 1), "f32", "s32"),        # layouts and element type
    ((6,), (0,), (6,), (0,), "f32", "u32"),
    ((2, 4), (1, 0), (2, 4, 2), (2, 1, 0), "f32", "u16"),  # a narrower type: a new minor dim
])
def test_bitcast_on_cpu_matches_memory_model(case, tmp_path):
    dims, src, out_dims, out, src_type, out_type = case
    x = (np.arange(np.prod(dims), dtype=np.float32).reshape(dims) - 3.5) * 1.25
    out_dtype = {"f32": None, "s32": np.int32, "u32": np.uint32, "u16": np.uint16}[out_type]
    model = _physical_bitcast(x, src, out_dims, out, out_dtype)
    want = [-model if out_type != "u16" else (-model.astype(np.int32)).astype(np.uint16)]
    text = _bitcast_module(dims, src, out_dims, out, src_type, out_type)
    path = tmp_path / "m.hlo"
    path.write_text(text)
    assert campaign.run_one(str(path), [x], want, str(tmp_path)) == []


def test_scalar_bitcast_in_a_comparator_reinterprets_bits():
    # XLA:CPU's sort comparators bitcast f32 -> s32 on scalars (the batched evaluator path).
    text = """HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] bitcast(a)
  ib = s32[] bitcast(b)
  ROOT lt = pred[] compare(ia, ib), direction=LT
}
ENTRY main {
  x = f32[6] parameter(0)
  ROOT s = f32[6] sort(x), dimensions={0}, to_apply=cmp
}
"""
    x = np.array([3.0, 1.0, 2.5, 0.5, 7.0, 0.25], np.float32)   # positive: bits sort as values
    np.testing.assert_array_equal(evaluate_module(parse_module(text), [x])[0], np.sort(x))


def test_imported_fusions_are_inlined_whatever_their_kind():
    # A kLoop fusion rooted at a variadic reduce (a tuple) and a kOutput fusion calling a
    # nested fusion: minijax's pipeline inlines both and fuses afresh.
    text = """HloModule m
max_arg {
  a = f32[] parameter(0)
  ia = s32[] parameter(1)
  b = f32[] parameter(2)
  ib = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GE
  v = f32[] select(gt, a, b)
  i = s32[] select(gt, ia, ib)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
fused_reduce {
  p = f32[4,5]{1,0} parameter(0)
  io = s32[4,5]{1,0} iota(), iota_dimension=1
  c = f32[] constant(-inf)
  z = s32[] constant(0)
  ROOT r = (f32[4]{0}, s32[4]{0}) reduce(p, io, c, z), dimensions={1}, to_apply=max_arg
}
inner {
  q = f32[4,5]{1,0} parameter(0)
  ROOT e = f32[4,5]{1,0} exponential(q)
}
outer {
  q0 = f32[4,5]{1,0} parameter(0)
  f = f32[4,5]{1,0} fusion(q0), kind=kLoop, calls=inner
  ROOT t = f32[5,4]{0,1} transpose(f), dimensions={1,0}
}
ENTRY main {
  x = f32[4,5]{1,0} parameter(0)
  fr = (f32[4]{0}, s32[4]{0}) fusion(x), kind=kLoop, calls=fused_reduce
  g = s32[4]{0} get-tuple-element(fr), index=1
  o = f32[5,4]{0,1} fusion(x), kind=kOutput, calls=outer
  ROOT out = (s32[4]{0}, f32[5,4]{0,1}) tuple(g, o)
}
"""
    module = parse_module(text)
    assert CallInliner().run(module)
    assert not any(i.opcode == "fusion" for i in module.entry.instructions)
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    want = [np.argmax(x, axis=1).astype(np.int32), np.exp(x).T]
    for got, w in zip(evaluate_module(module, [x]), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.hlo")
        with open(path, "w") as f:
            f.write(text)
        assert campaign.run_one(path, [x], want, tmp) == []


def test_called_computations_round_trip():
    text = open(os.path.join(HERE, "top_k.compiled.hlo")).read()
    module = parse_module(text)
    topk = module.entry.root
    assert topk.attrs["custom_call_target"] == "TopK"
    [comparator] = topk.called["called_computations"]
    assert comparator in module.computations
    printed = module_to_text(module)
    assert "called_computations={" in printed
    assert module_to_text(parse_module(printed)) == printed


def test_scheduled_module_with_async_pairs(tmp_path):
    # XLA's text for a scheduled module: is_scheduled, input_output_alias, buffer_donor,
    # tiled / memory-space layouts, shardings, all-reduce-start/-done with a JSON
    # backend_config, compare type=TOTALORDER, a while with known_trip_count,
    # reduce-precision, get-dimension-size and copy-start/-done.
    path = os.path.join(HERE, "scheduled_async.synthetic.hlo")
    rng = np.random.default_rng(0)
    a, b = (np.where(rng.random((2, 8, 128)) < 0.5, -1, 1) * (0.5 + rng.random((2, 8, 128)))
            ).astype(np.float32)
    v = np.where(a < b, a, b)
    for _ in range(5):
        v = v.astype(np.float16).astype(np.float32) * np.float32(0.5)
    assert campaign.run_one(path, [a, b], [v, np.int32(128)], str(tmp_path)) == []


def test_async_start_done_and_async_wrapped_computation(tmp_path):
    text = """HloModule m, is_scheduled=true
wrapped {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[4] parameter(0)
  st = ((f32[4]), f32[4], s32[]) async-start(a), calls=wrapped
  up = ((f32[4]), f32[4], s32[]) async-update(st)
  d = f32[4] async-done(up)
  ag = (f32[4], f32[4]) all-gather-start(d), replica_groups={}, dimensions={0}
  agd = f32[4] all-gather-done(ag)
  cp = (f32[4], f32[4], u32[], u32[]) collective-permute-start(agd), source_target_pairs={{0,0}}
  cpd = f32[4] collective-permute-done(cp)
  ROOT ar = f32[4] all-reduce(cpd), replica_groups={}, to_apply=sum
}
"""
    path = tmp_path / "m.hlo"
    path.write_text(text)
    x = np.array([0.0, 1.0, -1.0, 2.0], np.float32)
    assert campaign.run_one(str(path), [x], [np.exp(x)], str(tmp_path)) == []


# ------------------------------------------------------------- live JAX (skipped without)

LIVE = ("ew_chain", "reduce_sum_axes", "dot_batch", "conv_nhwc", "gather_2d",
        "scatter_add_dup", "sort_multi", "cumsum", "scan_rnn", "random_normal", "softmax",
        "mlp_grad", "vmap_gather", "transposes_3d", "top_k_ties_nan", "argsort_ties")


@pytest.fixture(scope="module")
def live_programs():
    jax = pytest.importorskip("jax")
    import programs
    return jax, programs.programs(jax)


@pytest.mark.parametrize("name", LIVE)
def test_live_jax_modules(live_programs, name, tmp_path):
    jax, progs = live_programs
    f, args, x64 = progs[name]
    with jax.enable_x64(x64):
        jf = jax.jit(f, keep_unused=True)
        lowered = jf.lower(*args)
        texts = {"lowered": lowered.as_text(dialect="hlo"), "compiled": lowered.compile().as_text()}
        expected = [np.asarray(o) for o in jax.tree_util.tree_leaves(jf(*args))]
        leaves = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    for kind, text in texts.items():
        path = tmp_path / f"{kind}.hlo"
        path.write_text(text)
        assert campaign.run_one(str(path), leaves, expected, str(tmp_path)) == [], kind


@pytest.mark.parametrize("name", ["copy_transpose_out.compiled", "argmax_argmin.compiled"])
def test_run_hlo_without_optimization_still_normalizes(name, tmp_path):
    from minijax.tools import run_hlo
    base = name.split(".")[0]
    args = campaign.load_arrays(os.path.join(HERE, f"{base}.args.npz"), "arg")
    expected = campaign.load_arrays(os.path.join(HERE, f"{base}.expected.npz"), "out")
    np.savez(tmp_path / "a.npz", **{f"arg{i}": a for i, a in enumerate(args)})
    status = run_hlo.run([os.path.join(HERE, f"{name}.hlo"), "--args", str(tmp_path / "a.npz"),
                          "--out", str(tmp_path / "o.npz"), "--backend", "cpu", "--no-opt"])
    assert status == 0
    got = np.load(tmp_path / "o.npz")
    for i, want in enumerate(expected):
        assert campaign.compare(got[f"out{i}"], want, f"out{i}") is None
