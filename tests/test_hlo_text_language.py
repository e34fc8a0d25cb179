"""The whole HLO text language: free layout, omitted shapes, nested operands, XLA-optimized
dumps, and the opcodes/element types XLA:CPU accepts (opt-barrier, batch-norm-*, fft,
stochastic-convert, tuple copy, s4/u4, f8 types, complex atan2 and division).

References: NumPy formulas, hand-computed values, and JAX 0.10.2's outputs stored in
tests/data/hlo_text/*.npz (written by tests/data/hlo_text/make.py)."""

from __future__ import annotations

import glob
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minijax.backends import get_backend
from minijax.compiler import pipeline
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo.parser import HloParseError, parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.verifier import verify_module

DATA = os.path.join(os.path.dirname(__file__), "data", "hlo_text")


def run_both(text, *args):
    """Evaluate `text` with the reference evaluator and the optimized CPU backend."""
    module = parse_module(text)
    verify_module(module)
    want = evaluate_module(module, list(args))
    opt = pipeline.optimize(parse_module(text), pipeline.CompileOptions(backend="cpu"))
    got = [np.asarray(o) for o in get_backend("cpu").compile(opt, None).execute(list(args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    return want


# ------------------------------------------------------------------------ layout of text

FREE_LAYOUT = """HloModule m /* a comment */
// a line comment
ENTRY e {
  x = f32[3] parameter(0)  y = f32[3] parameter(1)
  ROOT r = compare(x, y),
      direction=GT,
      metadata={op_name="gt"}
}
"""


def test_free_layout_and_inferred_compare_shape():
    module = parse_module(FREE_LAYOUT)
    assert str(module.entry.root.shape.element_type) == "pred"
    out = run_both(FREE_LAYOUT, np.float32([1, 2, 3]), np.float32([2, 2, 2]))
    np.testing.assert_array_equal(out[0], [False, False, True])


def test_nested_instruction_operands():
    text = "ENTRY e { ROOT r = add(s32[] parameter(0), s32[] constant(1)) }"
    module = parse_module(text)
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "constant", "add"]
    assert run_both(text, np.int32(41))[0] == 42
    nested_attr = ("ENTRY e { x = f32[2] parameter(0) ROOT s = select(compare(x, "
                   "f32[2] constant({0, 0})), direction=LT, negate(x), x) }")
    np.testing.assert_array_equal(run_both(nested_attr, np.float32([-1, 2]))[0], [1, 2])


def test_inferred_shapes_of_convolution_dot_and_tuples():
    text = """ENTRY e {
      x = f32[1,5,2] parameter(0)
      w = f32[3,2,4] parameter(1)
      c = convolution(x, w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f
      d = dot(c, f32[4,2] constant({{1,0},{0,1},{1,1},{2,0}})), lhs_contracting_dims={2},
          rhs_contracting_dims={0}
      t = tuple(c, d)
      ROOT g = get-tuple-element(t), index=1
    }"""
    module = parse_module(text)
    shapes = {i.name: i.shape for i in module.entry.instructions}
    assert shapes["c"].dims == (1, 5, 4) and shapes["d"].dims == (1, 5, 2)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 5, 2), np.float32), rng.standard_normal((3, 2, 4),
                                                                             np.float32)
    want = evaluate_module(module, [x, w])[0]
    xp = np.pad(x[0], ((1, 1), (0, 0)))
    conv = np.stack([np.einsum("kc,kco->o", xp[i:i + 3], w) for i in range(5)])
    ref = conv @ np.array([[1, 0], [0, 1], [1, 1], [2, 0]], np.float32)
    np.testing.assert_allclose(want[0], ref, rtol=1e-5, atol=1e-5)


def test_missing_shape_that_cannot_be_inferred_is_a_clear_error():
    with pytest.raises(HloParseError, match="cannot infer the shape of b.*broadcast"):
        parse_module("ENTRY e { x = f32[] parameter(0) ROOT b = broadcast(x), dimensions={} }")


def _reformat(text: str, data) -> str:
    """Re-layout printed HLO: random whitespace/newlines/comments between tokens."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("HloModule"):
            out.append(line + "\n")
            continue
        pieces = line.strip().split(", ")
        sep = data.draw(st.sampled_from([", ", ",\n    ", " ,", ", /* c */ ", ",\t"]))
        end = data.draw(st.sampled_from(["\n", " ", "  // note\n", " /* x */ "]))
        out.append(sep.join(pieces) + end)
    return "".join(out)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_print_parse_print_is_stable_under_any_layout(data):
    texts = [FREE_LAYOUT] + [open(p).read() for p in sorted(glob.glob(
        os.path.join(DATA, "*.hlo")))]
    text = data.draw(st.sampled_from(texts))
    printed = module_to_text(parse_module(text))
    assert module_to_text(parse_module(_reformat(printed, data))) == printed


# ------------------------------------------------------------------------ JAX/XLA dumps

@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(DATA, "*.hlo"))),
                         ids=os.path.basename)
def test_jax_and_xla_optimized_dumps_run_like_jax(path):
    stem = os.path.basename(path)[:-4].removesuffix("_opt")
    data = np.load(os.path.join(DATA, stem + ".npz"))
    args = [data[f"arg{i}"] for i in range(len([k for k in data.files if k[:3] == "arg"]))]
    text = open(path).read()
    outs = run_both(text, *args)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o, data[f"out{i}"], rtol=2e-4, atol=2e-4)
    assert module_to_text(parse_module(module_to_text(parse_module(text)))) == \
        module_to_text(parse_module(text))


# ------------------------------------------------------------------------ opcodes

def test_opt_barrier_and_tuple_copy():
    text = """ENTRY e {
      x = f32[4] parameter(0)
      t = (f32[4], f32[4]) tuple(x, x)
      c = copy(t)
      b = opt-barrier(c)
      ROOT r = add(get-tuple-element(b), index=1, x)
    }"""
    module = parse_module(text)
    assert "opt-barrier(" in module_to_text(module)
    np.testing.assert_array_equal(run_both(text, np.float32([1, 2, 3, 4]))[0], [2, 4, 6, 8])


def _bn_ref(x, f, eps):
    axes = tuple(i for i in range(x.ndim) if i != f)
    shape = [1] * x.ndim
    shape[f] = -1
    mean, var = x.mean(axes), x.var(axes)
    return mean, var, axes, shape


def test_batch_norm_training_inference_grad_against_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    scale, offset = np.float32([1, 2, 0.5]), np.float32([0, 1, -1])
    dy = rng.standard_normal((2, 3, 4)).astype(np.float32)
    text = """ENTRY e {
      x = f32[2,3,4] parameter(0)  s = f32[3] parameter(1)  o = f32[3] parameter(2)
      dy = f32[2,3,4] parameter(3)
      t = batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
      m = get-tuple-element(t), index=1
      v = get-tuple-element(t), index=2
      y = batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
      g = batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index=1
      ROOT r = tuple(get-tuple-element(t), index=0, y, g)
    }"""
    outs = run_both(text, x, scale, offset, dy)
    y_train, y_inf, dx, ds, do = outs
    x64 = x.astype(np.float64)
    mean, var, axes, shape = _bn_ref(x64, 1, 1e-3)
    xhat = (x64 - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
    ref = xhat * scale.reshape(shape) + offset.reshape(shape)
    np.testing.assert_allclose(y_train, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y_inf, ref, rtol=1e-5, atol=1e-5)
    # Gradients of sum(dy * batchnorm(x)) by central differences in float64.
    def loss(xv):
        m, v, _, _ = _bn_ref(xv, 1, 1e-3)
        yv = (xv - m.reshape(shape)) / np.sqrt(v.reshape(shape) + 1e-3)
        return float(np.sum(dy * (yv * scale.reshape(shape) + offset.reshape(shape))))
    h = 1e-6
    num = np.zeros_like(x64)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x64)
        e[idx] = h
        num[idx] = (loss(x64 + e) - loss(x64 - e)) / (2 * h)
    np.testing.assert_allclose(dx, num, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ds, np.sum(dy * xhat, axes), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(do, np.sum(dy, axes), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,src,dst,length,ref", [
    ("FFT", "c64[2,4]", "c64[2,4]", "{4}", lambda x: np.fft.fft(x)),
    ("IFFT", "c64[2,4]", "c64[2,4]", "{2,4}", lambda x: np.fft.ifft2(x)),
    ("RFFT", "f32[2,6]", "c64[2,4]", "{6}", lambda x: np.fft.rfft(x)),
    ("IRFFT", "c64[3,2,4]", "f32[3,2,6]", "{2,6}", lambda x: np.fft.irfft2(x, s=(2, 6))),
])
def test_fft_opcode_against_numpy(kind, src, dst, length, ref):
    text = (f"ENTRY e {{ x = {src} parameter(0) "
            f"ROOT f = fft(x), fft_type={kind}, fft_length={length} }}")
    module = parse_module(text)
    assert module_to_text(module).count(f"fft_type={kind}, fft_length={length}") == 1
    assert module.entry.root.shape == parse_module(
        f"ENTRY e {{ x = {src} parameter(0) ROOT f = {dst} fft(x), fft_type={kind}, "
        f"fft_length={length} }}").entry.root.shape
    rng = np.random.default_rng(2)
    dims = module.entry.parameters[0].shape.dims
    x = rng.standard_normal(dims) + (1j * rng.standard_normal(dims) if src[0] == "c" else 0)
    x = x.astype(module.entry.parameters[0].shape.dtype)
    np.testing.assert_allclose(run_both(text, x)[0], ref(x), rtol=1e-5, atol=1e-5)


def test_stochastic_convert_follows_xla_decomposition():
    text = ("ENTRY e { x = f32[7] parameter(0) r = u32[7] parameter(1) "
            "ROOT c = s8[7] stochastic-convert(x, r) }")
    x = np.float32([2.25, 2.25, -2.75, -2.75, 1000, -1000, np.nan])
    # fraction 0.25 -> 2^30 threshold; 0.75 -> 3 * 2^30.
    r = np.uint32([2**30 - 1, 2**30, 3 * 2**30 - 1, 3 * 2**30, 0, 0, 0])
    np.testing.assert_array_equal(run_both(text, x, r)[0], [3, 2, -3, -2, 127, -128, 0])


def test_narrow_integer_types_wrap_in_their_width():
    text = """ENTRY e {
      x = s4[5] parameter(0)  y = s4[5] parameter(1)
      a = add(x, y)  m = multiply(x, y)  s = shift-right-logical(x, y)
      p = popcnt(x)  z = count-leading-zeros(x)  u = u4[5] bitcast-convert(x)
      ROOT t = tuple(a, m, s, p, z, u)
    }"""
    x = np.array([7, -8, 3, -1, 1], ml_dtypes.int4)
    y = np.array([1, -1, 1, 1, 2], ml_dtypes.int4)
    a, m, s, p, z, u = run_both(text, x, y)
    as_int = lambda v: v.astype(np.int8).tolist()  # noqa: E731
    assert as_int(a) == [-8, 7, 4, 0, 3]
    assert as_int(m) == [7, -8, 3, -1, 2]          # 7*1, -8*-1 wraps to -8
    assert as_int(s) == [3, 0, 1, 7, 0]            # -8 >>> -1 (>= width) is 0; 0xF >>> 1 = 7
    assert as_int(p) == [3, 1, 2, 4, 1]
    assert as_int(z) == [1, 0, 2, 0, 3]
    assert u.astype(np.uint8).tolist() == [7, 8, 3, 15, 1]


@pytest.mark.parametrize("et,dtype", [("f8e4m3fn", ml_dtypes.float8_e4m3fn),
                                      ("f8e5m2", ml_dtypes.float8_e5m2),
                                      ("f8e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz),
                                      ("f8e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
                                      ("f8e4m3fnuz", ml_dtypes.float8_e4m3fnuz)])
def test_fp8_ops_round_each_result_to_the_type(et, dtype):
    text = f"""ENTRY e {{
      x = {et}[4] parameter(0)
      c = {et}[4] constant({{1.5, 2, -0.5, 3}})
      ROOT r = (f32[4], {et}[4], u8[4]) tuple(f32[4] convert(multiply(x, c)),
          divide(x, c), u8[4] bitcast-convert(x))
    }}"""
    x = np.array([1.25, 3, 5, -7], dtype)
    prod, quot, bits = run_both(text, x)
    c = np.array([1.5, 2, -0.5, 3], dtype)
    ref = (x.astype(np.float32) * c.astype(np.float32)).astype(dtype).astype(np.float32)
    np.testing.assert_array_equal(prod, ref)
    np.testing.assert_array_equal(quot, (x.astype(np.float32) / c.astype(np.float32))
                                  .astype(dtype))
    np.testing.assert_array_equal(bits, x.view(np.uint8))
    printed = module_to_text(parse_module(text))
    assert module_to_text(parse_module(printed)) == printed


# ------------------------------------------------------------------------ complex

# JAX 0.10.2 (XLA:CPU) values of complex64 division.
_DIV_CASES = [
    ((1, 1), (0, 0), (np.inf, np.inf)),
    ((-1, 2), (0, 0), (-np.inf, np.inf)),
    ((np.inf, 1), (1, 2), (np.inf, -np.inf)),
    ((1, np.inf), (2, 0), (np.nan, np.inf)),
    ((1, 2), (np.inf, 1), (0, 0)),
    ((1, -2), (-np.inf, np.inf), (0, 0)),
    ((np.nan, 1), (0, 0), (np.nan, np.inf)),
    ((3, 4), (1, 2), (2.2, -0.4)),
]


def test_complex_division_by_zero_inf_nan_matches_xla():
    a = np.array([complex(*c[0]) for c in _DIV_CASES], np.complex64)
    b = np.array([complex(*c[1]) for c in _DIV_CASES], np.complex64)
    text = "ENTRY e { a = c64[8] parameter(0) b = c64[8] parameter(1) ROOT d = divide(a, b) }"
    got = run_both(text, a, b)[0]
    want = np.array([complex(*c[2]) for c in _DIV_CASES], np.complex64)
    np.testing.assert_allclose(got.real, want.real, rtol=1e-6)
    np.testing.assert_allclose(got.imag, want.imag, rtol=1e-6)


def test_complex_atan2():
    y = np.array([1 + 2j, 0.5 - 1j, -1 - 1j], np.complex64)
    x = np.array([2 - 1j, 1 + 1j, 0.5 + 2j], np.complex64)
    text = "ENTRY e { y = c64[3] parameter(0) x = c64[3] parameter(1) ROOT a = atan2(y, x) }"
    got = run_both(text, y, x)[0]
    # JAX 0.10.2 (XLA:CPU) lax.atan2 on complex64.
    want = np.array([np.nan + 1j * np.nan, -0.4636477 - 0.80471873j,
                     -0.5739712 + 0.26149204j], np.complex64)
    np.testing.assert_allclose(got[1:], want[1:], rtol=2e-6)
    assert np.isnan(got[0].real) and np.isnan(got[0].imag)  # (x+iy) / sqrt(0) there
    np.testing.assert_allclose(np.tan(got[1:].astype(np.complex128)),
                               (y / x)[1:], rtol=1e-5)


def test_run_hlo_reads_and_writes_narrow_types(tmp_path):
    from minijax.tools import run_hlo
    path = tmp_path / "m.hlo"
    path.write_text("HloModule m\nENTRY e { x = f8e4m3fn[3] parameter(0)\n"
                    "  ROOT r = add(x, x) }\n")
    np.savez(tmp_path / "in.npz", arg0=np.array([1.5, 100, -3], ml_dtypes.float8_e4m3fn))
    assert run_hlo.run([str(path), "--args", str(tmp_path / "in.npz"), "--out",
                        str(tmp_path / "out.npz"), "--backend", "cpu"]) == 0
    out = np.load(tmp_path / "out.npz")["out0"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [3, 192, -6])  # 200: a tie, rounds to even 192
