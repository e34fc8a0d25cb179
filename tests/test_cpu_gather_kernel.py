"""Gather as a generated CPU kernel (compiler/codegen/gather.py): compiled results against
NumPy loops of XLA's gather rule and against eager (NumPy-implemented) lax.gather, for
collapsed and window dims, index vectors on any dim, operand batching dims, out-of-bounds
starts (clamped) and every integer index type; and the execution plan runs it as a kernel,
not an evaluator thunk."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.pipeline import CompileOptions, optimize

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
from minijax.backends.cpu import CpuBackend  # noqa: E402

GDN = lax.GatherDimensionNumbers


def _plan(fn, *args) -> str:
    return minijax.jit(fn).lower(*args).compile()._entry.executable.as_text()


def _check(operand, indices, dnums, sizes):
    def f(x, i):
        return lax.gather(x, i, dnums, sizes, mode="clip")
    plan = _plan(f, operand, indices)
    assert "EVALUATOR THUNK (gather)" not in plan, plan
    got = np.asarray(minijax.jit(f)(operand, indices))
    want = np.asarray(f(operand, indices))       # eager: the NumPy implementation
    np.testing.assert_array_equal(got, want)
    return got


def test_rows_by_index_matches_numpy_with_clamping():
    x = np.arange(40, dtype=np.float32).reshape(8, 5)
    idx = np.array([[0], [7], [3], [-4], [12]], np.int32)
    got = _check(x, idx, GDN(offset_dims=(1,), collapsed_slice_dims=(0,),
                             start_index_map=(0,)), (1, 5))
    np.testing.assert_array_equal(got, x[np.clip(idx[:, 0], 0, 7)])


def test_window_slices_clamped_to_stay_inside():
    x = np.arange(60, dtype=np.int32).reshape(6, 10)
    idx = np.array([[1, 8], [5, 0], [-2, 3], [4, 100]], np.int64)
    got = _check(x, idx, GDN(offset_dims=(1, 2), collapsed_slice_dims=(),
                             start_index_map=(0, 1)), (2, 3))
    for k, (r, c) in enumerate(idx):
        r, c = np.clip(r, 0, 4), np.clip(c, 0, 7)
        np.testing.assert_array_equal(got[k], x[r:r + 2, c:c + 3])


_HLO_GATHER = """HloModule g
ENTRY e {
  x = f32[4,7,3] parameter(0)
  i = $ITYPE parameter(1)
  ROOT g = $OUT gather(x, i), $DNUMS
}
"""


@pytest.mark.parametrize("itype,out,dnums,indices", [
    # index vector along dim 0 of the indices (XLA allows any dim; JAX always uses the last)
    ("u8[2,5]", "f32[5,3]", "offset_dims={1}, collapsed_slice_dims={0,1}, "
     "start_index_map={0,1}, index_vector_dim=0, slice_sizes={1,1,3}",
     np.array([[2, 0, 3, 1, 9], [6, 1, 0, 5, 200]], np.uint8)),
    # index_vector_dim == rank: every index is a scalar start
    ("s16[2,2]", "f32[2,2,4,3]", "offset_dims={2,3}, collapsed_slice_dims={1}, "
     "start_index_map={1}, index_vector_dim=2, slice_sizes={4,1,3}",
     np.array([[5, -3], [0, 6]], np.int16)),
])
def test_index_vector_dim_against_the_evaluator(itype, out, dnums, indices):
    text = _HLO_GATHER.replace("$ITYPE", itype).replace("$OUT", out).replace(
        "$DNUMS", dnums)
    x = np.random.default_rng(0).standard_normal((4, 7, 3)).astype(np.float32)
    want = evaluate_module(parse_module(text), [x, indices])
    want = want[0] if isinstance(want, (list, tuple)) else want
    exe = CpuBackend().compile(optimize(parse_module(text), CompileOptions(backend="cpu")))
    assert "EVALUATOR THUNK" not in exe.as_text()
    got = exe.execute([x, indices])
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_operand_batching_dims():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 9, 2)).astype(np.float32)
    idx = rng.integers(-2, 11, size=(3, 4, 1)).astype(np.int32)
    dnums = GDN(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
                operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    got = _check(x, idx, dnums, (1, 1, 2))
    want = np.stack([x[b, np.clip(idx[b, :, 0], 0, 8)] for b in range(3)])
    np.testing.assert_array_equal(got, want)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 12), picks=st.integers(1, 6),
       axis=st.sampled_from([0, 1]), seed=st.integers(0, 2 ** 16),
       index_dtype=st.sampled_from([np.int8, np.int32, np.int64, np.uint16, np.uint32]))
def test_take_along_axis_matches_numpy(rows, cols, picks, axis, seed, index_dtype):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    n = x.shape[axis]
    shape = (picks, cols) if axis == 0 else (rows, picks)
    lo = 0 if np.issubdtype(index_dtype, np.unsignedinteger) else -n
    idx = rng.integers(lo, n, size=shape).astype(index_dtype)
    f = minijax.jit(lambda x, i: jnp.take_along_axis(x, i, axis=axis))
    want = np.take_along_axis(x, np.where(idx < 0, idx + n, idx).astype(np.int64), axis=axis)
    np.testing.assert_array_equal(np.asarray(f(x, idx)), want)


def test_cross_entropy_gather_and_its_gradient():
    """The label pick of a cross-entropy: gather forward, scatter-add backward."""
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((32, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 32).astype(np.int32)

    def loss(z):
        lp = minijax.nn.log_softmax(z)
        return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=1))

    assert "EVALUATOR THUNK (gather)" not in _plan(loss, logits)
    z = logits.astype(np.float64)
    lp = z - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True)) - z.max(
        1, keepdims=True)
    np.testing.assert_allclose(float(minijax.jit(loss)(logits)),
                               -lp[np.arange(32), labels].mean(), rtol=1e-6)
    p = np.exp(lp)
    onehot = np.eye(10)[labels]
    np.testing.assert_allclose(np.asarray(minijax.jit(minijax.grad(loss))(logits)),
                               (p - onehot) / 32, rtol=1e-5, atol=1e-7)
