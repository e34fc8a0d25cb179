"""The evaluator's XLA:CPU custom calls (TopK, LAPACK) and XLA's rng-bit-generator.

LAPACK results are checked by their defining properties (P A = L U with LAPACK's pivot
choice, Q R = A with LAPACK's reflector signs as NumPy's LAPACK gives them, triangular
solves against np.linalg.solve); random bits against values JAX 0.10.2 computed on CPU,
hard-coded, and, with jax importable, against JAX live for every algorithm, width and a
range of shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

from minijax.compiler.evaluator import EvaluatorError, evaluate_module
from minijax.compiler.hlo.parser import parse_module


def _custom_call_module(target, operand_shapes, result_shape, config=""):
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(operand_shapes))
    operands = ", ".join(f"p{i}" for i in range(len(operand_shapes)))
    return parse_module(f"""HloModule m
ENTRY main {{
{params}
  ROOT c = {result_shape} custom-call({operands}), custom_call_target="{target}", \
api_version=API_VERSION_TYPED_FFI, backend_config={{{config}}}
}}
""")


def _shape(x):
    t = {np.float32: "f32", np.float64: "f64", np.complex64: "c64", np.complex128: "c128"}
    return f"{t[x.dtype.type]}[{','.join(map(str, x.shape))}]"


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


P = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


@pytest.mark.parametrize("p", "sdcz")
@pytest.mark.parametrize("uplo", "LU")
def test_potrf_batched(p, uplo):
    a = _rand((2, 4, 4), P[p])
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)
    m = _custom_call_module(f"lapack_{p}potrf_ffi", [_shape(spd)],
                            f"({_shape(spd)}, s32[2])", f"uplo = {ord(uplo)} : ui8")
    factor, info = evaluate_module(m, [spd])
    np.testing.assert_array_equal(info, [0, 0])
    chol = np.linalg.cholesky(spd.astype(np.complex128))
    tol = 1e-5 if p in "sc" else 1e-12
    if uplo == "L":
        np.testing.assert_allclose(np.tril(factor), chol, rtol=tol, atol=tol)
        np.testing.assert_array_equal(np.triu(factor, 1), np.triu(spd, 1))   # untouched
    else:
        np.testing.assert_allclose(np.triu(factor), np.conj(np.swapaxes(chol, -1, -2)),
                                   rtol=tol, atol=tol)
        np.testing.assert_array_equal(np.tril(factor, -1), np.tril(spd, -1))


def test_potrf_reports_the_first_minor_that_is_not_positive_definite():
    a = np.diag([4.0, 9.0, -1.0, 16.0]).astype(np.float32)
    m = _custom_call_module("lapack_spotrf_ffi", [_shape(a)], "(f32[4,4], s32[])",
                            "uplo = 76 : ui8")
    factor, info = evaluate_module(m, [a])
    assert int(info) == 3
    np.testing.assert_array_equal(np.diag(factor)[:2], [2.0, 3.0])


@pytest.mark.parametrize("side", "LR")
@pytest.mark.parametrize("uplo", "LU")
@pytest.mark.parametrize("trans", "NTC")
@pytest.mark.parametrize("diag", "NU")
def test_trsm_every_variant(side, uplo, trans, diag):
    a = _rand((3, 3), np.complex128, 1) + 3 * np.eye(3)
    b = _rand((3, 2) if side == "L" else (2, 3), np.complex128, 2)
    config = (f"diag = {ord(diag)} : ui8, side = {ord(side)} : ui8, "
              f"trans_x = {ord(trans)} : ui8, uplo = {ord(uplo)} : ui8")
    m = _custom_call_module("lapack_ztrsm_ffi", [_shape(a), _shape(b)], _shape(b), config)
    x = evaluate_module(m, [a, b])[0]
    t = np.tril(a) if uplo == "L" else np.triu(a)
    if diag == "U":
        np.fill_diagonal(t, 1)
    op = {"N": t, "T": t.T, "C": np.conj(t.T)}[trans]
    want = np.linalg.solve(op, b) if side == "L" else np.linalg.solve(op.T, b.T).T
    np.testing.assert_allclose(x, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p", "sdcz")
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)])
def test_getrf_pivots_like_lapack(p, shape):
    a = _rand(shape, P[p], 3)
    m_, n_ = shape[-2:]
    k = min(m_, n_)
    batch = shape[:-2]
    ipiv = f"s32[{','.join(map(str, batch + (k,)))}]"
    info = f"s32[{','.join(map(str, batch))}]"
    m = _custom_call_module(f"lapack_{p}getrf_ffi", [_shape(a)],
                            f"({_shape(a)}, {ipiv}, {info})")
    lu, piv, inf = evaluate_module(m, [a])
    assert np.all(inf == 0)
    for idx in np.ndindex(*batch):
        x = a[idx].astype(np.complex128)
        lower = np.tril(lu[idx], -1)[:, :k] + np.eye(m_, k)
        upper = np.triu(lu[idx])[:k]
        for j, pj in enumerate(piv[idx] - 1):
            mag = np.abs(x[j:, j].real) + np.abs(x[j:, j].imag)
            assert pj == j + np.argmax(mag)        # the first largest |re| + |im| pivots
            x[[j, pj]] = x[[pj, j]]
            x[j + 1:, j] /= x[j, j]
            x[j + 1:, j + 1:] -= np.outer(x[j + 1:, j], x[j, j + 1:])
        tol = 1e-4 if p in "sc" else 1e-12
        np.testing.assert_allclose(lower @ upper, _permuted(a[idx], piv[idx]), rtol=tol,
                                   atol=tol)


def _permuted(a, piv):
    a = a.copy()
    for j, pj in enumerate(piv - 1):
        a[[j, pj]] = a[[pj, j]]
    return a


@pytest.mark.parametrize("p", "sdcz")
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5)])
def test_geqrf_orgqr_match_lapack_conventions(p, shape):
    a = _rand(shape, P[p], 4)
    k = min(shape)
    t = _shape(a).split("[")[0]
    m = _custom_call_module(f"lapack_{p}geqrf_ffi", [_shape(a)], f"({_shape(a)}, {t}[{k}])")
    r_and_v, tau = evaluate_module(m, [a])
    q_module = _custom_call_module(f"lapack_{p}{'un' if p in 'cz' else 'or'}gqr_ffi",
                                   [_shape(a), f"{t}[{k}]"], _shape(a))
    q = evaluate_module(q_module, [r_and_v, tau])[0][:, :k]
    r = np.triu(r_and_v)[:k]
    q_np, r_np = np.linalg.qr(a)          # NumPy's LAPACK: the same reflector signs
    tol = 1e-4 if p in "sc" else 1e-12
    np.testing.assert_allclose(q, q_np, rtol=tol, atol=tol)
    np.testing.assert_allclose(r, r_np, rtol=tol, atol=tol)


def test_syevd_and_gesdd():
    a = _rand((4, 4), np.float64, 5)
    sym = a + a.T
    m = _custom_call_module("lapack_dsyevd_ffi", [_shape(sym)], "(f64[4,4], f64[4], s32[])",
                            "mode = 86 : ui8, uplo = 76 : ui8")
    v, w, info = evaluate_module(m, [sym])
    np.testing.assert_allclose(sym @ v, v * w, atol=1e-12)
    assert np.all(np.diff(w) > 0) and int(info) == 0
    b = _rand((5, 3), np.float64, 6)
    m = _custom_call_module("lapack_dgesdd_ffi", [_shape(b)],
                            "(f64[5,3], f64[3], f64[5,5], f64[3,3], s32[])", "mode = 65 : ui8")
    _, s, u, vt, info = evaluate_module(m, [b])
    np.testing.assert_allclose(u[:, :3] * s @ vt, b, atol=1e-12)


def test_topk_custom_call_follows_its_comparator():
    text = """HloModule m
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[2,6] parameter(0)
  ROOT t = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target="TopK", \
called_computations={lt}
}
"""
    x = np.array([[5, 1, 4, 1, 9, 2], [0, -3, 7, 7, 2, -3]], np.float32)
    values, idx = evaluate_module(parse_module(text), [x])
    np.testing.assert_array_equal(values, [[1, 1, 2], [-3, -3, 0]])
    np.testing.assert_array_equal(idx, [[1, 3, 5], [1, 5, 0]])
    gt = parse_module(text.replace("direction=LT", "direction=GT"))
    values, idx = evaluate_module(gt, [x])
    np.testing.assert_array_equal(values, [[9, 5, 4], [7, 7, 2]])
    np.testing.assert_array_equal(idx, [[4, 0, 2], [2, 3, 4]])


def test_unknown_target_is_named():
    m = _custom_call_module("__onednn$matmul", ["f32[2,2]"], "f32[2,2]")
    with pytest.raises(EvaluatorError, match=r"__onednn\$matmul.*lapack_\?potrf_ffi"):
        evaluate_module(m, [np.eye(2, dtype=np.float32)])


# ------------------------------------------------------------------ rng-bit-generator


def _rbg(algorithm, dims, etype, key):
    text = f"""HloModule m
ENTRY main {{
  k = u32[4] parameter(0)
  r = u32[2,2] reshape(k)
  s = u64[2] bitcast-convert(r)
  g = (u64[2], {etype}[{','.join(map(str, dims))}]) rng-bit-generator(s), algorithm={algorithm}
  s2 = u64[2] get-tuple-element(g), index=0
  c = u32[2,2] bitcast-convert(s2)
  k2 = u32[4] reshape(c)
  b = {etype}[{','.join(map(str, dims))}] get-tuple-element(g), index=1
  ROOT t = (u32[4], {etype}[{','.join(map(str, dims))}]) tuple(k2, b)
}}
"""
    return evaluate_module(parse_module(text), [np.asarray(key, np.uint32)])


KEY = [1, 2, 3, 4]


@pytest.mark.parametrize("algorithm", ["rng_default", "rng_philox"])
def test_philox_matches_jax(algorithm):
    state, bits = _rbg(algorithm, (2, 3), "u32", KEY)
    # jax.lax.rng_bit_generator(np.array([1, 2, 3, 4], np.uint32), (2, 3)) on CPU:
    np.testing.assert_array_equal(state, [1, 2, 5, 4])
    np.testing.assert_array_equal(bits, [[512747620, 1298009047, 1267190206],
                                         [761827841, 1383286907, 1639995030]])


def test_threefry_matches_jax():
    # JAX's values for algorithm=RNG_THREE_FRY, key [1, 2, 3, 4]: a (2, 3) draw pairs the
    # two words of each counter step across dimension 0.
    words = [1576285164, 2249660814, 740599976, 2425682526, 2436392515, 1497962777]
    state, bits = _rbg("rng_three_fry", (2, 3), "u32", KEY)
    np.testing.assert_array_equal(state, [1, 2, 6, 4])
    np.testing.assert_array_equal(bits, [words[0::2], words[1::2]])
    state, bits = _rbg("rng_three_fry", (3, 2), "u32", KEY)
    np.testing.assert_array_equal(bits.ravel(), words)
    state, bits = _rbg("rng_three_fry", (3,), "u64", KEY)
    np.testing.assert_array_equal(state, [1, 2, 6, 4])
    np.testing.assert_array_equal(bits, np.array([9662219624799024108, 10418227120389269672,
                                                  6433701140276733507], np.uint64))


def test_rng_bit_generator_matches_live_jax():
    jax = pytest.importorskip("jax")
    from jax import lax
    algorithms = [lax.RandomAlgorithm.RNG_DEFAULT, lax.RandomAlgorithm.RNG_PHILOX,
                  lax.RandomAlgorithm.RNG_THREE_FRY]
    keys = [np.array(KEY, np.uint32), np.array([2**32 - 1, 2**32 - 1, 9, 2**32 - 16],
                                               np.uint32)]
    cases = [(0, np.uint32, (3, 5)), (0, np.uint8, (7, 3, 2)), (0, np.uint64, (5,)),
             (1, np.uint16, (2, 4)), (2, np.uint32, (3, 5)), (2, np.uint32, (5, 1, 3)),
             (2, np.uint8, (4, 2)), (2, np.uint64, (3, 2)), (2, np.uint16, ()),
             (0, np.uint32, (0, 2))]
    with jax.enable_x64(True):
        for i, (alg, dtype, shape) in enumerate(cases):
            key = keys[i % 2]
            f = jax.jit(lambda k, s=shape, d=dtype, a=algorithms[alg]: lax.rng_bit_generator(
                k, s, dtype=d, algorithm=a))
            want = f(key)
            got = evaluate_module(parse_module(f.lower(key).as_text(dialect="hlo")), [key])
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, np.asarray(w), err_msg=f"{alg} {dtype} {shape}")


@pytest.mark.parametrize("p", "sdcz")
def test_geev_eigenpairs(p):
    a = _rand((2, 4, 4), P[p], 7)
    c = "c64" if p in "sc" else "c128"
    real = _shape(a).split("[")[0]
    values = f"{real}[2,4], {real}[2,4]" if p in "sd" else f"{c}[2,4]"
    m = _custom_call_module(f"lapack_{p}geev_ffi", [_shape(a)],
                            f"({values}, {c}[2,4,4], {c}[2,4,4], s32[2])",
                            "compute_left = 86 : ui8, compute_right = 86 : ui8")
    out = evaluate_module(m, [a])
    w = out[0] + 1j * out[1] if p in "sd" else out[0]
    vl, vr = out[-3], out[-2]
    tol = 1e-4 if p in "sc" else 1e-10
    np.testing.assert_allclose(np.sort_complex(w.ravel()),
                               np.sort_complex(np.linalg.eigvals(a)
                                               .ravel()), rtol=tol, atol=tol)
    np.testing.assert_allclose(a @ vr, vr * w[:, None, :], atol=tol * 10)
    np.testing.assert_allclose(np.conj(np.swapaxes(vl, -1, -2)) @ a,
                               w[:, :, None] * np.conj(np.swapaxes(vl, -1, -2)), atol=tol * 10)
    for v in (vl, vr):      # LAPACK's normalization: unit norm, largest component real
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=tol)
        big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[:, None, :], axis=-2)
        np.testing.assert_allclose(big.imag, 0, atol=tol)
