"""Dots on the CPU backend: direct BLAS gemm calls with trans flags, the np.matmul fallback,
and the passes that fold transposes into dots. References: NumPy and the HLO evaluator."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_passes_common import dims_text, entry_opcodes, hlo, run_pass  # noqa: E402

import minijax  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.backends.cpu import blas as cpu_blas  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.passes.dot_canonicalization import (  # noqa: E402
    DotCanonicalization,
    is_canonical,
)
from minijax.compiler.passes.transpose_folding import TransposeFolding  # noqa: E402
from minijax.compiler.pipeline import CompileOptions, optimize  # noqa: E402
from minijax.test_util import enable_x64, evaluate_lowered  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64, "s32": np.int32}
SIZES = st.sampled_from([0, 1, 2, 3, 5, 8, 17])


def _layout(data, batch, m, k, n):
    """Random positions for the batch/free/contracting dims of both operands."""
    lhs = [("b", i) for i in range(len(batch))] + [("m", i) for i in range(len(m))] + \
        [("k", i) for i in range(len(k))]
    rhs = [("b", i) for i in range(len(batch))] + [("k", i) for i in range(len(k))] + \
        [("n", i) for i in range(len(n))]
    return data.draw(st.permutations(lhs)), data.draw(st.permutations(rhs))


def _einsum_spec(lhs_order, rhs_order):
    letters = {}
    for d in lhs_order + rhs_order:
        letters.setdefault(d, "abcdefghijklmnop"[len(letters)])
    out = [d for d in lhs_order if d[0] == "b"]
    out = sorted(out, key=lambda d: d[1]) + [d for d in lhs_order if d[0] == "m"] + \
        [d for d in rhs_order if d[0] == "n"]
    return ("".join(letters[d] for d in lhs_order) + "," + "".join(letters[d] for d in rhs_order)
            + "->" + "".join(letters[d] for d in out))


def _args(rng, dtype, lhs_shape, rhs_shape):
    if np.issubdtype(dtype, np.integer):
        return (rng.integers(-4, 5, lhs_shape).astype(dtype),
                rng.integers(-4, 5, rhs_shape).astype(dtype))
    return (rng.standard_normal(lhs_shape).astype(dtype),
            rng.standard_normal(rhs_shape).astype(dtype))


@settings(max_examples=40, deadline=None)
@given(batch=st.lists(SIZES, max_size=2), m=st.lists(SIZES, max_size=2),
       k=st.lists(SIZES, min_size=1, max_size=2), n=st.lists(SIZES, max_size=2),
       et=st.sampled_from(sorted(DTYPES)), data=st.data())
def test_dot_any_layout_through_jit_matches_numpy_and_evaluator(batch, m, k, n, et, data):
    lhs_order, rhs_order = _layout(data, batch, m, k, n)
    size = {"b": batch, "m": m, "k": k, "n": n}
    lhs_shape = tuple(size[c][i] for c, i in lhs_order)
    rhs_shape = tuple(size[c][i] for c, i in rhs_order)

    def pos(order, kind):
        return tuple(order.index((kind, i)) for i in range(len(size[kind])))
    dims = ((pos(lhs_order, "k"), pos(rhs_order, "k")),
            (pos(lhs_order, "b"), pos(rhs_order, "b")))
    dtype = DTYPES[et]
    a, b = _args(np.random.default_rng(len(lhs_shape)), dtype, lhs_shape, rhs_shape)

    def f(x, y):
        return lax.dot_general(x, y, dims)
    with enable_x64(dtype == np.float64):
        got = np.asarray(minijax.jit(f, backend="cpu")(a, b))
        ref = evaluate_lowered(f, a, b)[0]
    want = np.einsum(_einsum_spec(lhs_order, rhs_order), a.astype(np.float64),
                     b.astype(np.float64))
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10)


# Every orientation of a (batched) matrix product, as HLO dot dims.
ORIENTATIONS = [(ta, tb) for ta in (False, True) for tb in (False, True)]


def _oriented_text(et, nb, bsz, mm, kk, nn, ta, tb):
    bd = [bsz] * nb
    lhs = bd + ([kk, mm] if ta else [mm, kk])
    rhs = bd + ([nn, kk] if tb else [kk, nn])
    batch = dims_text(range(nb))
    return hlo(f"""
  a = {et}[{dims_text(lhs)}] parameter(0)
  b = {et}[{dims_text(rhs)}] parameter(1)
  d = {et}[{dims_text(bd + [mm, nn])}] dot(a, b), lhs_batch_dims={{{batch}}}, \
rhs_batch_dims={{{batch}}}, lhs_contracting_dims={{{nb if ta else nb + 1}}}, \
rhs_contracting_dims={{{nb + 1 if tb else nb}}}
  ROOT t = ({et}[{dims_text(bd + [mm, nn])}]) tuple(d)""")


def _compile(text):
    return CpuBackend().compile(optimize(parse_module(text), CompileOptions(backend="cpu")))


@pytest.mark.parametrize("ta,tb", ORIENTATIONS)
@pytest.mark.parametrize("nb", [0, 1, 2])
@pytest.mark.parametrize("et", ["f32", "f64"])
def test_transposed_operands_run_as_gemm_without_transposes(et, nb, ta, tb):
    text = _oriented_text(et, nb, 3, 7, 5, 6, ta, tb)
    exe = _compile(text)
    opt = exe.module
    assert entry_opcodes(opt)["transpose"] == 0 and entry_opcodes(opt)["fusion"] == 0
    dot = next(i for i in opt.entry.instructions if i.opcode == "dot")
    assert cpu_blas.gemm_form(dot) is not None
    args = [a for a in _args(np.random.default_rng(1), DTYPES[et],
                             *(p.shape.dims for p in opt.entry.parameters))]
    ref = evaluate_module(parse_module(text), [x.copy() for x in args])[0]
    got = exe.execute(args)[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5 if et == "f32" else 1e-12, atol=1e-5)


def test_large_gemm_uses_all_blas_threads_path_and_restores_thread_count():
    """Above SMALL_GEMM_MNK the call goes through ctypes (GIL released); below it through
    the builtin with one BLAS thread, after which the BLAS thread count is what it was."""
    blas = cpu_blas.find_blas()
    if blas is None:
        pytest.skip("no BLAS gemm found in this NumPy")
    big = 170
    assert big ** 3 >= cpu_blas.SMALL_GEMM_MNK
    rng = np.random.default_rng(2)
    import ctypes
    get = ctypes.CFUNCTYPE(ctypes.c_int)(blas.get_threads) if blas.get_threads else None
    before = get() if get else None
    # Split along M, along N (M small), along batch, and a small product.
    for nb, bsz, mm, nn, ta, tb in ((0, 1, big, big - 1, True, False),
                                    (0, 1, 3, 2 * big, False, True),
                                    (1, 5, 31, 47, True, True), (0, 1, 9, 8, True, True)):
        kk = cpu_blas.SMALL_GEMM_MNK // (bsz * mm * nn) + 1 if mm != 9 else 10
        text = _oriented_text("f32", nb, bsz, mm, kk, nn, ta, tb)
        exe = _compile(text)
        args = _args(rng, np.float32, *(p.shape.dims for p in exe.module.entry.parameters))
        a64, b64 = (x.astype(np.float64) for x in args)
        a64 = np.swapaxes(a64, -1, -2) if ta else a64
        b64 = np.swapaxes(b64, -1, -2) if tb else b64
        np.testing.assert_allclose(exe.execute(list(args))[0], a64 @ b64, rtol=1e-4,
                                   atol=1e-3)
    if get is not None:
        assert get() == before
        call = cpu_blas.GemmCall(blas, (1, 4, 4, 4, False, False), np.float32, True)
        a = np.ones((4, 4), np.float32)
        out = np.empty((4, 4), np.float32)
        call.call(a, a, out)
        np.testing.assert_array_equal(out, np.full((4, 4), 4.0, np.float32))
        assert get() == before


@pytest.fixture
def no_blas(monkeypatch):
    """The backend as on a platform without a CBLAS gemm: find_blas() finds nothing."""
    monkeypatch.setattr(cpu_blas, "CANDIDATES", (("no_such_sgemm", "no_such_dgemm", 64,
                                                  "no_such_set", "no_such_get"),))
    cpu_blas.find_blas.cache_clear()
    minijax.clear_caches()
    yield
    cpu_blas.find_blas.cache_clear()
    minijax.clear_caches()


@pytest.mark.parametrize("ta,tb", ORIENTATIONS)
def test_fallback_without_blas_symbol_gives_same_results(no_blas, ta, tb):
    assert cpu_blas.find_blas() is None
    for et in ("f32", "f64"):
        text = _oriented_text(et, 1, 2, 5, 4, 3, ta, tb)
        exe = _compile(text)
        args = _args(np.random.default_rng(3), DTYPES[et],
                     *(p.shape.dims for p in exe.module.entry.parameters))
        ref = evaluate_module(parse_module(text), [x.copy() for x in args])[0]
        np.testing.assert_allclose(exe.execute(list(args))[0], ref, rtol=1e-5, atol=1e-6)


def test_fallback_gradient_of_a_matmul_matches_numpy(no_blas):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)

    def loss(w, x):
        return lax.reduce_sum(lax.tanh(lax.dot(x, w)), (0, 1))
    g_fallback = np.asarray(minijax.jit(minijax.grad(loss))(w, x))
    assert cpu_blas.find_blas() is None
    want = x.T.astype(np.float64) @ (1 - np.tanh(x.astype(np.float64) @ w) ** 2)
    np.testing.assert_allclose(g_fallback, want, rtol=1e-5, atol=1e-5)


def test_gemm_form_rejects_what_one_gemm_cannot_read():
    def dot(entry):
        module = parse_module(hlo(entry))
        return next(i for i in module.entry.instructions if i.opcode == "dot")
    # Batch dim not leading.
    assert cpu_blas.gemm_form(dot("""
  a = f32[3,2,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  d = f32[2,3,5] dot(a, b), lhs_batch_dims={1}, rhs_batch_dims={0}, \
lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (f32[2,3,5]) tuple(d)""")) is None
    # Free dims interleaved with contracting dims.
    assert cpu_blas.gemm_form(dot("""
  a = f32[3,4,2] parameter(0)
  b = f32[4,2,5] parameter(1)
  d = f32[4,5] dot(a, b), lhs_contracting_dims={0,2}, rhs_contracting_dims={0,1}
  ROOT t = (f32[4,5]) tuple(d)""")) is None
    # Two contracting dims flattened in the same order on both sides: one gemm, K = 6.
    assert cpu_blas.gemm_form(dot("""
  a = f32[4,3,2] parameter(0)
  b = f32[3,2,5] parameter(1)
  d = f32[4,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
  ROOT t = (f32[4,5]) tuple(d)""")) == (1, 4, 5, 6, False, False)
    # ... but not when they pair up crosswise.
    assert cpu_blas.gemm_form(dot("""
  a = f32[4,3,2] parameter(0)
  b = f32[2,3,5] parameter(1)
  d = f32[4,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}
  ROOT t = (f32[4,5]) tuple(d)""")) is None


def test_transpose_of_dot_becomes_dot_with_operands_swapped():
    entry = """
  a = f32[6,3] parameter(0)
  b = f32[6,4] parameter(1)
  d = f32[3,4] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[4,3] transpose(d), dimensions={1,0}
  ROOT r = (f32[4,3]) tuple(t)"""
    module, changed = run_pass(TransposeFolding(), hlo(entry))
    assert changed and entry_opcodes(module)["transpose"] == 0
    dot = next(i for i in module.entry.instructions if i.opcode == "dot")
    assert [o.name for o in dot.operands] == ["b", "a"]


def test_batched_transpose_of_dot_folds_only_when_batch_stays():
    base = """
  a = f32[2,6,3] parameter(0)
  b = f32[2,6,4] parameter(1)
  d = f32[2,3,4] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, \
lhs_contracting_dims={1}, rhs_contracting_dims={1}"""
    module, changed = run_pass(TransposeFolding(), hlo(base + """
  t = f32[2,4,3] transpose(d), dimensions={0,2,1}
  ROOT r = (f32[2,4,3]) tuple(t)"""))
    assert changed and entry_opcodes(module)["transpose"] == 0
    module, changed = run_pass(TransposeFolding(), hlo(base + """
  t = f32[4,2,3] transpose(d), dimensions={2,0,1}
  ROOT r = (f32[4,2,3]) tuple(t)"""))
    assert not changed and entry_opcodes(module)["transpose"] == 1


def test_transpose_of_dot_with_other_users_is_kept():
    entry = """
  a = f32[6,3] parameter(0)
  b = f32[6,4] parameter(1)
  d = f32[3,4] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[4,3] transpose(d), dimensions={1,0}
  ROOT r = (f32[4,3], f32[3,4]) tuple(t, d)"""
    module, changed = run_pass(TransposeFolding(), hlo(entry))
    assert not changed and entry_opcodes(module)["dot"] == 1


def test_canonicalization_keeps_transposed_operands_as_stored():
    entry = """
  a = f32[2,6,3] parameter(0)
  b = f32[2,4,6] parameter(1)
  d = f32[2,3,4] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, \
lhs_contracting_dims={1}, rhs_contracting_dims={2}
  ROOT r = (f32[2,3,4]) tuple(d)"""
    module, changed = run_pass(DotCanonicalization(), hlo(entry))
    assert not changed and entry_opcodes(module)["transpose"] == 0
    entry = """
  a = f32[5,2,3] parameter(0)
  b = f32[5,2,4] parameter(1)
  d = f32[3,4] dot(a, b), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT r = (f32[3,4]) tuple(d)"""
    module, changed = run_pass(DotCanonicalization(), hlo(entry))
    dot = next(i for i in module.entry.instructions if i.opcode == "dot")
    assert changed and is_canonical(dot) and entry_opcodes(module)["transpose"] == 0
    assert dot.attrs["lhs_contracting_dims"] == (0,)


def test_mlp_training_step_has_no_transposes_left():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    w1 = rng.standard_normal((12, 8)).astype(np.float32)
    w2 = rng.standard_normal((8, 3)).astype(np.float32)

    def loss(ws, x):
        h = lax.max(lax.dot(x, ws[0]), 0.0)
        return lax.reduce_sum(lax.mul(lax.dot(h, ws[1]), lax.dot(h, ws[1])), (0, 1))

    def step(w1, w2, x):
        g1, g2 = minijax.grad(loss)([w1, w2], x)
        return lax.sub(w1, lax.mul(g1, 0.1)), lax.sub(w2, lax.mul(g2, 0.1))
    compiled = minijax.jit(step).lower(w1, w2, x).compile()
    module = compiled._entry.module
    assert not [i for c in module.computations for i in c.instructions
                if i.opcode == "transpose"]
    got = compiled(w1, w2, x)
    want = evaluate_lowered(step, w1, w2, x)
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-4, atol=1e-4)
