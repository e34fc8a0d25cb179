"""CPU backend: fused kernels vs the evaluator, threading, the object cache, thread safety."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from thread_runner import run_in_threads  # noqa: E402

from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

ADD = "add_f { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }\n"
MAX = "max_f { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] maximum(a, b) }\n"


def _t(dims):
    return "f32[" + ",".join(str(d) for d in dims) + "]"


def _check(text, args, rtol=2e-5):
    module = parse_module(text)
    ref = evaluate_module(module, args)
    got = CpuBackend().compile(module).execute(args)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape and g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=rtol, atol=1e-5)
    return got


dims_st = st.lists(st.sampled_from([0, 1, 2, 3, 7, 17, 33]), min_size=1, max_size=3)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(dims=dims_st, seed=st.integers(0, 1000))
def test_fusion_shapes(dims, seed):
    """Elementwise chain + broadcast + transpose + reductions over each axis and all axes."""
    rank = len(dims)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=dims).astype(np.float32)
    v = rng.normal(size=dims[-1:]).astype(np.float32)
    perm = list(reversed(range(rank)))
    tdims = [dims[p] for p in perm]
    fused = [f"p0 = {_t(dims)} parameter(0)", f"p1 = {_t(dims[-1:])} parameter(1)",
             f"b = {_t(dims)} broadcast(p1), dimensions={{{rank - 1}}}",
             f"m = {_t(dims)} multiply(p0, b)", f"e = {_t(dims)} tanh(m)",
             f"ROOT s = {_t(dims)} add(e, p0)"]
    lines = [f"x = {_t(dims)} parameter(0)", f"v = {_t(dims[-1:])} parameter(1)",
             f"f = {_t(dims)} fusion(x, v), kind=kLoop, calls=fused",
             f"t = {_t(tdims)} transpose(f), dimensions={{{','.join(map(str, perm))}}}",
             "z = f32[] constant(0)", "ninf = f32[] constant(-inf)"]
    outs = ["f", "t"]
    for d in range(rank):
        rdims = [n for k, n in enumerate(dims) if k != d]
        lines.append(f"r{d} = {_t(rdims)} reduce(f, z), dimensions={{{d}}}, to_apply=add_f")
        lines.append(f"q{d} = {_t(rdims)} reduce(x, ninf), dimensions={{{d}}}, to_apply=max_f")
        outs += [f"r{d}", f"q{d}"]
    lines.append(f"ra = f32[] reduce(f, z), dimensions={{{','.join(map(str, range(rank)))}}}, "
                 "to_apply=add_f")
    outs.append("ra")
    shapes = {"f": _t(dims), "t": _t(tdims), "ra": "f32[]"}
    for d in range(rank):
        shapes[f"r{d}"] = shapes[f"q{d}"] = _t([n for k, n in enumerate(dims) if k != d])
    lines.append(f"ROOT out = ({', '.join(shapes[o] for o in outs)}) tuple({', '.join(outs)})")
    text = (f"HloModule fs\n{ADD}{MAX}fused {{\n  " + "\n  ".join(fused) + "\n}\n"
            "ENTRY main {\n  " + "\n  ".join(lines) + "\n}\n")
    _check(text, [x, v], rtol=1e-4)


def test_indexing_ops():
    """Slices, pads (with interior/negative), concatenate, reverse, iota, dynamic-slice."""
    text = """HloModule idx
ENTRY main {
  x = f32[5,7] parameter(0)
  y = f32[5,3] parameter(1)
  i = s32[] parameter(2)
  c = f32[] constant(-1)
  s = f32[2,3] slice(x), slice={[1:5:2], [0:7:3]}
  p = f32[8,16] pad(x, c), padding=1_2x2_1_1
  n = f32[3,5] pad(x, c), padding=-1_-1x0_-2
  k = f32[5,10] concatenate(x, y), dimensions={1}
  r = f32[5,7] reverse(x), dimensions={0,1}
  io = s32[5,7] iota(), iota_dimension=1
  ds = f32[2,3] dynamic-slice(x, i, i), dynamic_slice_sizes={2,3}
  ROOT out = (f32[2,3], f32[8,16], f32[3,5], f32[5,10], f32[5,7], s32[5,7], f32[2,3])
    tuple(s, p, n, k, r, io, ds)
}
"""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 7)).astype(np.float32)
    y = rng.normal(size=(5, 3)).astype(np.float32)
    for i in (0, 2, 9, -3):
        _check(text, [x, y, np.int32(i)])


def test_multi_output_fusions():
    text = f"""HloModule mo
{ADD}
loop {{
  p = f32[33,65] parameter(0)
  e = f32[33,65] exponential(p)
  n = f32[33,65] negate(p)
  ROOT t = (f32[33,65], f32[33,65]) tuple(e, n)
}}
red {{
  p = f32[33,65] parameter(0)
  z = f32[] constant(0)
  sq = f32[33,65] multiply(p, p)
  a = f32[33] reduce(p, z), dimensions={{1}}, to_apply=add_f
  b = f32[33] reduce(sq, z), dimensions={{1}}, to_apply=add_f
  ROOT t = (f32[33], f32[33]) tuple(a, b)
}}
mixed {{
  p = f32[33,65] parameter(0)
  z = f32[] constant(0)
  e = f32[33,65] exponential(p)
  a = f32[65] reduce(e, z), dimensions={{0}}, to_apply=add_f
  ROOT t = (f32[33,65], f32[65]) tuple(e, a)
}}
ENTRY main {{
  x = f32[33,65] parameter(0)
  f = (f32[33,65], f32[33,65]) fusion(x), kind=kLoop, calls=loop
  g = (f32[33], f32[33]) fusion(x), kind=kInput, calls=red
  h = (f32[33,65], f32[65]) fusion(x), kind=kInput, calls=mixed
  f0 = f32[33,65] get-tuple-element(f), index=0
  f1 = f32[33,65] get-tuple-element(f), index=1
  g0 = f32[33] get-tuple-element(g), index=0
  g1 = f32[33] get-tuple-element(g), index=1
  h0 = f32[33,65] get-tuple-element(h), index=0
  h1 = f32[65] get-tuple-element(h), index=1
  ROOT out = (f32[33,65], f32[33,65], f32[33], f32[33], f32[33,65], f32[65])
    tuple(f0, f1, g0, g1, h0, h1)
}}
"""
    x = np.random.default_rng(1).normal(size=(33, 65)).astype(np.float32)
    _check(text, [x])


def test_large_kernels_cross_threading_threshold():
    """Elementwise, row and column reductions big enough to run on the thread pool."""
    text = f"""HloModule big
{ADD}
ENTRY main {{
  x = f32[1201,1001] parameter(0)
  e = f32[1201,1001] logistic(x)
  z = f32[] constant(0)
  r = f32[1201] reduce(e, z), dimensions={{1}}, to_apply=add_f
  c = f32[1001] reduce(e, z), dimensions={{0}}, to_apply=add_f
  ROOT out = (f32[1201,1001], f32[1201], f32[1001]) tuple(e, r, c)
}}
"""
    x = np.random.default_rng(2).normal(size=(1201, 1001)).astype(np.float32)
    module = parse_module(text)
    exe = CpuBackend().compile(module)
    assert any(k.threads > 1 for k in exe.kernels) or os.cpu_count() == 1
    ref = evaluate_module(module, [x])
    for g, r in zip(exe.execute([x]), ref):
        np.testing.assert_allclose(g, r, rtol=1e-4)


def test_float32_sum_accuracy():
    n = 10 ** 7
    text = f"HloModule s\n{ADD}ENTRY main {{\n  x = f32[{n}] parameter(0)\n" \
           "  z = f32[] constant(0)\n" \
           f"  r = f32[] reduce(x, z), dimensions={{0}}, to_apply=add_f\n" \
           "  ROOT out = (f32[]) tuple(r)\n}\n"
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    got = CpuBackend().compile(parse_module(text)).execute([x])[0]
    exact = x.astype(np.float64).sum()
    assert abs(float(got) - exact) / exact < 1e-6


def test_thread_safety():
    text = "HloModule ts\nENTRY main {\n  x = f32[100003] parameter(0)\n" \
           "  e = f32[100003] sine(x)\n  ROOT out = (f32[100003]) tuple(e)\n}\n"
    exe = CpuBackend().compile(parse_module(text))

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.normal(size=100003).astype(np.float32)
            got = exe.execute([x])[0]
            np.testing.assert_allclose(got, np.sin(x), rtol=1e-5, atol=1e-6)

    run_in_threads(work, 4)


_CACHE_SCRIPT = textwrap.dedent("""
    import numpy as np
    from minijax.backends.cpu import CpuBackend
    from minijax.backends.cpu.runtime import get_jit
    from minijax.compiler.hlo.parser import parse_module
    text = ("HloModule c\\nENTRY main {\\n  x = f32[17] parameter(0)\\n"
            "  e = f32[17] exponential(x)\\n  ROOT out = (f32[17]) tuple(e)\\n}\\n")
    x = np.linspace(-2, 2, 17).astype(np.float32)
    got = CpuBackend().compile(parse_module(text)).execute([x])[0]
    assert np.allclose(got, np.exp(x), rtol=1e-6)
    s = get_jit().stats
    print(s["compiled"], s["cache_hits"])
""")


def test_persistent_cache_across_processes(tmp_path):
    env = dict(os.environ, MINIJAX_CACHE_DIR=str(tmp_path))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")

    def run():
        out = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], env=env, check=True,
                             capture_output=True, text=True).stdout.split()
        return int(out[0]), int(out[1])

    assert run() == (1, 0)
    files = [f for f in os.listdir(tmp_path) if f.endswith(".o")]
    assert len(files) == 1
    assert run() == (0, 1)
    (tmp_path / files[0]).write_bytes(b"MINIJAX-OBJ-1\ncorrupted")
    assert run() == (1, 0)  # ignored and rewritten
    assert run() == (0, 1)


@pytest.mark.parametrize("dims,red", [((13, 37), 1), ((13, 37), 0), ((4, 5, 6), 2),
                                      ((1, 1), 1), ((0, 3), 1), ((1201, 1001), 1)])
def test_multi_output_reduce_with_elementwise_root_is_one_kernel(dims, red):
    """softmax's fusion: sum(exp(x)) and exp(x) as outputs, computed by a single kernel."""
    t = _t(dims)
    kept = _t([d for i, d in enumerate(dims) if i != red])
    text = f"""HloModule mixed
{ADD}
fused {{
  p = {t} parameter(0)
  e = {t} exponential(p)
  z = f32[] constant(0)
  r = {kept} reduce(e, z), dimensions={{{red}}}, to_apply=add_f
  ROOT out = ({kept}, {t}) tuple(r, e)
}}
ENTRY main {{
  x = {t} parameter(0)
  f = ({kept}, {t}) fusion(x), kind=kInput, calls=fused
  a = {kept} get-tuple-element(f), index=0
  b = {t} get-tuple-element(f), index=1
  ROOT out = ({kept}, {t}) tuple(a, b)
}}
"""
    x = np.random.default_rng(3).normal(size=dims).astype(np.float32)
    _check(text, [x], rtol=1e-4)
    exe = CpuBackend().compile(parse_module(text))
    assert exe.kernel_count == 1


def test_reused_temporaries_are_per_thread_and_outputs_fresh():
    """Large temporaries live in per-thread pools; outputs never share them or each other."""
    text = f"""HloModule pool
{ADD}
fused {{
  p = f32[300,200] parameter(0)
  e = f32[300,200] exponential(p)
  z = f32[] constant(0)
  r = f32[300] reduce(e, z), dimensions={{1}}, to_apply=add_f
  ROOT out = (f32[300], f32[300,200]) tuple(r, e)
}}
ENTRY main {{
  x = f32[300,200] parameter(0)
  f = (f32[300], f32[300,200]) fusion(x), kind=kInput, calls=fused
  s = f32[300] get-tuple-element(f), index=0
  e = f32[300,200] get-tuple-element(f), index=1
  v = f32[300] reverse(s), dimensions={{0}}
  b = f32[300,200] broadcast(v), dimensions={{0}}
  d = f32[300,200] divide(e, b)
  ROOT out = (f32[300,200]) tuple(d)
}}
"""
    # The reversed sums keep row fusion from merging the two kernels (e stays a temporary).
    from minijax.compiler.pipeline import CompileOptions, optimize
    module = optimize(parse_module(text), CompileOptions(backend="cpu"))
    exe = CpuBackend().compile(module)
    assert exe._pool_size > 0
    rng = np.random.default_rng(5)
    xs = [rng.normal(size=(300, 200)).astype(np.float32) for _ in range(6)]
    want = [np.exp(x) / np.exp(x).sum(1)[::-1, None] for x in xs]
    first = exe.execute([xs[0]])[0]
    second = exe.execute([xs[1]])[0]
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(first, want[0], rtol=1e-5)

    def work(k):
        for _ in range(20):
            got = exe.execute([xs[k]])[0]
            np.testing.assert_allclose(got, want[k], rtol=1e-5)

    run_in_threads(work, len(xs))


_CONV_CASES = [
    # (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, dimension numbers)
    ((2, 5, 9, 3), (3, 3, 3, 4), (1, 1), "SAME", None, None, ("NHWC", "HWIO", "NHWC")),
    ((2, 3, 9, 8), (4, 3, 2, 3), (2, 1), [(1, 2), (0, -1)], None, None, ("NCHW", "OIHW", "NCHW")),
    ((1, 2, 7, 6), (3, 2, 3, 2), (1, 2), [(2, 0), (1, 1)], (2, 1), (1, 2),
     ("NCHW", "OIHW", "NHWC")),
    ((3, 4, 10), (5, 4, 3), (3,), [(-1, 2)], (1,), (2,), ("NCH", "OIH", "NCH")),
    ((1, 2, 4, 4, 3), (2, 2, 2, 3, 2), (1, 1, 1), "VALID", None, None,
     ("NDHWC", "DHWIO", "NDHWC")),
    ((2, 3, 2, 2), (4, 3, 5, 5), (1, 1), "VALID", None, None, ("NCHW", "OIHW", "NCHW")),
]


@pytest.mark.parametrize("case", _CONV_CASES)
def test_convolution_im2col_matches_evaluator(case):
    import minijax
    import minijax.lax as lax
    lshape, rshape, strides, padding, ldil, rdil, dn = case
    rng = np.random.default_rng(7)
    x = rng.normal(size=lshape).astype(np.float32)
    w = rng.normal(size=rshape).astype(np.float32)

    def f(x, w):
        return lax.conv_general_dilated(x, w, strides, padding, lhs_dilation=ldil,
                                        rhs_dilation=rdil, dimension_numbers=dn)
    lowered = minijax.jit(f).lower(x, w)
    assert "convolution via im2col" in lowered.compile()._entry.executable.as_text()
    want = evaluate_module(lowered.module, [x, w])[0]
    got = minijax.jit(f)(x, w)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def test_convolution_gradient_step_runs_without_evaluator_thunks():
    import minijax
    import minijax.lax as lax
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 6, 6, 3)).astype(np.float32)
    k = rng.normal(size=(3, 3, 3, 4)).astype(np.float32)

    def loss(k, x):
        z = lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return lax.reduce_sum(lax.mul(z, z), (0, 1, 2, 3))
    g = minijax.jit(minijax.grad(loss))
    exe = g.lower(k, x).compile()._entry.executable
    assert not exe.evaluator_thunks()
    eps = 1e-2
    e = np.zeros_like(k)
    e[1, 2, 0, 3] = eps
    fd = (float(loss(k + e, x)) - float(loss(k - e, x))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(g(k, x))[1, 2, 0, 3], fd, rtol=2e-2)


def test_warm_disk_cache_rebuilds_without_emitting_ir(tmp_path):
    """A second process with the same MINIJAX_CACHE_DIR replays the stored compile plan."""
    code = textwrap.dedent("""
        import json, sys
        import numpy as np
        from minijax.backends.cpu import CpuBackend
        from minijax.backends.cpu.runtime import get_jit
        from minijax.compiler.hlo.parser import parse_module
        from minijax.compiler.pipeline import CompileOptions, optimize
        text = sys.stdin.read()
        exe = CpuBackend().compile(optimize(parse_module(text), CompileOptions(backend="cpu")))
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        out = exe.execute([x])
        print(json.dumps({"ir": len(exe.llvm_ir()), "compiled": get_jit().stats["compiled"],
                          "out": [o.tolist() for o in out]}))
    """)
    text = f"""HloModule plan
{ADD}
ENTRY main {{
  x = f32[3,4] parameter(0)
  e = f32[3,4] exponential(x)
  z = f32[] constant(0)
  r = f32[3] reduce(e, z), dimensions={{1}}, to_apply=add_f
  ROOT out = (f32[3], f32[3,4]) tuple(r, e)
}}
"""
    env = dict(os.environ, MINIJAX_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], input=text, env=env,
                           capture_output=True, text=True, check=True, timeout=120)
            for _ in range(2)]
    import json
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["ir"] > 0 and first["compiled"] == 1
    assert second["ir"] == 0 and second["compiled"] == 0
    assert first["out"] == second["out"]
    x = np.exp(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_allclose(second["out"][0], x.sum(1), rtol=1e-5)
    for plan in tmp_path.glob("*.plan.json"):   # a corrupt plan falls back to compiling
        plan.write_text("{not json")
    third = subprocess.run([sys.executable, "-c", code], input=text, env=env,
                           capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(third.stdout.strip().splitlines()[-1])["out"] == first["out"]


def test_identical_kernels_are_compiled_once():
    """Fusions whose kernel bodies are identical share one LLVM function; a different
    constant or reducer keeps its own kernel. Results match the evaluator either way."""
    fused = ("{name} {{ p = f32[4,8] parameter(0)  c = f32[] constant({c})\n"
             "  b = f32[4,8] broadcast(c), dimensions={{}}\n"
             "  ROOT m = f32[4,8] multiply(p, b) }}\n")
    red = ("{name} {{ p = f32[4,8] parameter(0)  z = f32[] constant(0)\n"
           "  ROOT r = f32[4] reduce(p, z), dimensions={{1}}, to_apply={to} }}\n")
    text = ("HloModule twins\n" + ADD + MAX + fused.format(name="f1", c=2)
            + fused.format(name="f2", c=2) + fused.format(name="f3", c=3)
            + red.format(name="r1", to="add_f") + red.format(name="r2", to="max_f")
            + red.format(name="r3", to="add_f") + """ENTRY main {
  x = f32[4,8] parameter(0)
  a = f32[4,8] fusion(x), kind=kLoop, calls=f1
  b = f32[4,8] fusion(a), kind=kLoop, calls=f2
  c = f32[4,8] fusion(b), kind=kLoop, calls=f3
  d = f32[4] fusion(c), kind=kInput, calls=r1
  e = f32[4] fusion(c), kind=kInput, calls=r2
  g = f32[4] fusion(x), kind=kInput, calls=r3
  ROOT out = (f32[4,8], f32[4,8], f32[4], f32[4], f32[4]) tuple(b, c, d, e, g)
}
""")
    x = np.random.default_rng(5).normal(size=(4, 8)).astype(np.float32)
    got = _check(text, [x])
    np.testing.assert_allclose(got[0], x * 4, rtol=1e-6)
    exe = CpuBackend().compile(parse_module(text))
    assert exe.kernel_count == 6
    bodies = [ln for ln in exe.llvm_ir().splitlines() if ln.startswith("define internal")]
    assert len(bodies) == 4, bodies  # f1 (= f2), f3, r1 (= r3), r2
