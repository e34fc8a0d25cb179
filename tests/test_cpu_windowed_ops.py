"""reduce-window and select-and-scatter as generated CPU kernels (codegen/windows.py), against
the HLO evaluator: shapes, window sizes, strides, padding (negative too for reduce-window),
base and window dilation, reducers, init values that are not the reducer's identity (XLA
pads with the init value), ties in select-and-scatter (the first position wins under GE),
and every float width plus int32. Each module is checked to run as a kernel, not on the
evaluator."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from minijax import dtypes  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.codegen import windows  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": dtypes.bfloat16,
      "s32": np.int32}


def _shape(et, dims):
    return f"{et}[{','.join(map(str, dims))}]"


def _binary(name, et, op):
    return (f"{name} {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n"
            f"  ROOT r = {et}[] {op}(a, b)\n}}\n")


def _compare(name, et, direction):
    return (f"{name} {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n"
            f"  ROOT r = pred[] compare(a, b), direction={direction}\n}}\n")


def _window(size, stride, pad, ldil=None, rdil=None):
    text = (f"size={'x'.join(map(str, size))} stride={'x'.join(map(str, stride))} "
            f"pad={'x'.join(f'{lo}_{hi}' for lo, hi in pad)}")
    if ldil:
        text += f" lhs_dilate={'x'.join(map(str, ldil))}"
    if rdil:
        text += f" rhs_dilate={'x'.join(map(str, rdil))}"
    return "{" + text + "}"


def _values(et, shape, rng, ties=False):
    if et == "s32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    if ties:   # few distinct values: windows with equal maxima
        return rng.integers(-3, 4, shape).astype(NP[et])
    return rng.standard_normal(shape).astype(NP[et])


def _run(text, args, loop=None):
    """(kernel result, evaluator result); `loop`: whether the window must be a loop."""
    module = parse_module(text)
    want = evaluate_module(module, args)[0]
    exe = CpuBackend().compile(parse_module(text))
    assert not exe.evaluator_thunks(), exe.as_text()
    if loop is not None:
        assert ("win.body" in exe.llvm_ir()) == loop
    return np.asarray(exe.execute(args)[0]), np.asarray(want)


def _check(got, want, et, exact=False):
    assert got.shape == want.shape and got.dtype == want.dtype
    if exact or et in ("s32",):
        np.testing.assert_array_equal(got, want)
        return
    tol = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-5, "f64": 1e-12}[et]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


@st.composite
def reduce_window_cases(draw):
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 6)) for _ in range(rank)]
    size = [draw(st.integers(1, 3)) for _ in range(rank)]
    stride = [draw(st.integers(1, 3)) for _ in range(rank)]
    pad = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(rank)]
    ldil = [draw(st.integers(1, 2)) for _ in range(rank)]
    rdil = [draw(st.integers(1, 2)) for _ in range(rank)]
    out = []
    for n, k, s, (lo, hi), ld, rd in zip(dims, size, stride, pad, ldil, rdil):
        padded = lo + (n - 1) * ld + 1 + hi
        span = (k - 1) * rd + 1
        assume(padded >= span)
        out.append((padded - span) // s + 1)
    return dims, size, stride, pad, ldil, rdil, out


@settings(max_examples=30, deadline=None)
@given(case=reduce_window_cases(), et=st.sampled_from(["f32", "f64", "f16", "bf16", "s32"]),
       op=st.sampled_from(["add", "maximum", "minimum", "multiply"]),
       init=st.sampled_from([0, 1, -2]), seed=st.integers(0, 3))
def test_reduce_window_kernel_matches_evaluator(case, et, op, init, seed):
    dims, size, stride, pad, ldil, rdil, out = case
    text = ("HloModule rw\n" + _binary("red", et, op) + "ENTRY main {\n"
            f"  x = {_shape(et, dims)} parameter(0)\n"
            f"  init = {et}[] constant({init})\n"
            f"  ROOT r = {_shape(et, out)} reduce-window(x, init), "
            f"window={_window(size, stride, pad, ldil, rdil)}, to_apply=red\n}}\n")
    x = _values(et, dims, np.random.default_rng(seed))
    loop = None if np.prod(size) > windows.UNROLL else False
    if op == "multiply" and et != "s32":
        x = (1 + 0.1 * x.astype(np.float32)).astype(NP[et])
    got, want = _run(text, [x], loop=loop)
    _check(got, want, et, exact=op in ("maximum", "minimum"))


def test_reduce_window_large_window_runs_as_a_loop():
    """A window of more than UNROLL positions is a loop in the kernel, not straight-line."""
    k = 5
    assert k * k > windows.UNROLL
    text = ("HloModule rw\n" + _binary("red", "f32", "add") + "ENTRY main {\n"
            "  x = f32[3,20,20] parameter(0)\n  init = f32[] constant(0)\n"
            f"  ROOT r = f32[3,9,9] reduce-window(x, init), "
            f"window={_window((1, k, k), (1, 2, 2), ((0, 0), (1, 0), (1, 0)))}, "
            "to_apply=red\n}\n")
    x = np.random.default_rng(0).standard_normal((3, 20, 20)).astype(np.float32)
    got, want = _run(text, [x], loop=True)
    _check(got, want, "f32")


@st.composite
def select_scatter_cases(draw):
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 7)) for _ in range(rank)]
    size = [draw(st.integers(1, 3)) for _ in range(rank)]
    stride = [draw(st.integers(1, 3)) for _ in range(rank)]
    pad = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(rank)]
    out = []
    for n, k, s, (lo, hi) in zip(dims, size, stride, pad):
        assume(lo + n + hi >= k)
        out.append((lo + n + hi - k) // s + 1)
    return dims, size, stride, pad, out


@settings(max_examples=30, deadline=None)
@given(case=select_scatter_cases(), et=st.sampled_from(["f32", "f64", "f16", "bf16", "s32"]),
       direction=st.sampled_from(["GE", "GT", "LE"]),
       scatter=st.sampled_from(["add", "maximum"]), init=st.sampled_from([0, 3]),
       seed=st.integers(0, 3))
def test_select_and_scatter_kernel_matches_evaluator(case, et, direction, scatter, init, seed):
    dims, size, stride, pad, out = case
    text = ("HloModule sas\n" + _compare("sel", et, direction) + _binary("sc", et, scatter)
            + "ENTRY main {\n"
            f"  x = {_shape(et, dims)} parameter(0)\n"
            f"  src = {_shape(et, out)} parameter(1)\n"
            f"  init = {et}[] constant({init})\n"
            f"  ROOT r = {_shape(et, dims)} select-and-scatter(x, src, init), "
            f"window={_window(size, stride, pad)}, select=sel, scatter=sc\n}}\n")
    rng = np.random.default_rng(seed)
    x = _values(et, dims, rng, ties=True)
    src = _values(et, out, rng)
    got, want = _run(text, [x, src])
    _check(got, want, et)


def test_select_and_scatter_overlapping_large_windows_loop():
    """4x4 windows at stride 1 (16 windows cover each element, 16 positions each): loops."""
    text = ("HloModule sas\n" + _compare("sel", "f32", "GE") + _binary("sc", "f32", "add")
            + "ENTRY main {\n  x = f32[2,9,9] parameter(0)\n  src = f32[2,8,8] parameter(1)\n"
            "  init = f32[] constant(0)\n"
            "  ROOT r = f32[2,9,9] select-and-scatter(x, src, init), "
            f"window={_window((1, 4, 4), (1, 1, 1), ((0, 0), (1, 2), (2, 1)))}, "
            "select=sel, scatter=sc\n}\n")
    rng = np.random.default_rng(1)
    x = rng.integers(-2, 3, (2, 9, 9)).astype(np.float32)
    src = rng.standard_normal((2, 8, 8)).astype(np.float32)
    got, want = _run(text, [x, src], loop=True)
    _check(got, want, "f32")


def test_select_and_scatter_negative_padding_falls_back_with_a_reason():
    """Negative padding is not emitted: the kernel check names why."""
    text = ("HloModule sas\n" + _compare("sel", "f32", "GE") + _binary("sc", "f32", "add")
            + "ENTRY main {\n  x = f32[6] parameter(0)\n  src = f32[2] parameter(1)\n"
            "  init = f32[] constant(0)\n"
            "  ROOT r = f32[6] select-and-scatter(x, src, init), "
            "window={size=2 stride=2 pad=-1_-1}, select=sel, scatter=sc\n}\n")
    root = parse_module(text).entry.root
    assert "negative padding" in windows.unsupported_window_reason(root)


def test_cummax_cummin_signed_zeros_match_jax_eager_and_jit():
    """JAX (0.10.2, CPU): cummax([0, -0]) = [0, 0], cummax([-0, 0]) = [-0, 0],
    cummin([0, -0]) = [0, -0], cummin([-0, 0]) = [-0, -0] (reduce-window kernel, evaluator
    and the eager NumPy path all give XLA's signed zeros)."""
    import minijax
    from minijax import lax
    x = np.array([[0.0, -0.0], [-0.0, 0.0]], np.float32)
    want = {"cummax": [[0.0, 0.0], [-0.0, 0.0]], "cummin": [[0.0, -0.0], [-0.0, -0.0]]}
    for name, expected in want.items():
        fn = getattr(lax, name)
        for got in (fn(x, axis=1), minijax.jit(lambda v, fn=fn: fn(v, axis=1))(x)):
            got = np.asarray(got)
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(np.array(expected)))
