"""Scatter as a generated CPU kernel (compiler/codegen/cpu/scatter_loop.py): compiled
results against eager (NumPy-implemented) scatters, NumPy loops and the HLO evaluator, for
.at[].set/add/mul/min/max with repeated and out-of-bounds indices, window scatters,
batching dims and index vectors on any dim; and the plan runs it as a kernel."""

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

SDN = lax.ScatterDimensionNumbers


def _plan(fn, *args) -> str:
    return minijax.jit(fn).lower(*args).compile()._entry.executable.as_text()


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(1, 20), cols=st.integers(1, 4),
       method=st.sampled_from(["set", "add", "multiply", "min", "max"]),
       mode=st.sampled_from(["drop", "clip"]),
       dtype=st.sampled_from([np.float32, np.int32]), seed=st.integers(0, 2 ** 16))
def test_at_updates_match_eager(n, k, cols, method, mode, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, cols)) * 4).astype(dtype)
    idx = rng.integers(-n - 2, n + 2, size=k).astype(np.int32)   # repeats, out of bounds
    upd = (rng.standard_normal((k, cols)) * 4).astype(dtype)

    def f(x, i, u):
        return getattr(jnp.asarray(x).at[i], method)(u, mode=mode)

    assert "EVALUATOR THUNK (scatter)" not in _plan(f, x, idx, upd)
    np.testing.assert_array_equal(np.asarray(minijax.jit(f)(x, idx, upd)),
                                  np.asarray(f(x, idx, upd)))


def test_repeated_float_adds_apply_in_update_order():
    """Updates land in order, so a float sum rounds as the sequential loop does."""
    x = np.zeros(3, np.float32)
    idx = np.array([1, 1, 1, 1, 0], np.int32)
    upd = np.array([1e8, 1.0, -1e8, 1.0, 5.0], np.float32)
    want = x.copy()
    for i, u in zip(idx, upd):
        want[i] = np.float32(want[i] + u)
    got = minijax.jit(lambda x, i, u: x.at[i].add(u))(x, idx, upd)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_window_scatter_skips_windows_that_do_not_fit():
    x = np.zeros((6, 8), np.float32)
    idx = np.array([[0, 0], [4, 5], [5, 6], [-1, 2], [2, 3]], np.int32)
    upd = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3) + 1
    dnums = SDN(update_window_dims=(1, 2), inserted_window_dims=(),
                scatter_dims_to_operand_dims=(0, 1))

    def f(x, i, u):
        return lax.scatter_add(x, i, u, dnums, mode="drop")

    assert "EVALUATOR THUNK (scatter)" not in _plan(f, x, idx, upd)
    want = x.copy()
    for (r, c), u in zip(idx, upd):
        if 0 <= r <= 4 and 0 <= c <= 5:
            want[r:r + 2, c:c + 3] += u
    np.testing.assert_array_equal(np.asarray(minijax.jit(f)(x, idx, upd)), want)


def test_batching_dims():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 7)).astype(np.float32)
    idx = rng.integers(0, 7, size=(3, 4, 1)).astype(np.int32)
    upd = rng.standard_normal((3, 4)).astype(np.float32)
    dnums = SDN(update_window_dims=(), inserted_window_dims=(1,),
                scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                scatter_indices_batching_dims=(0,))

    def f(x, i, u):
        return lax.scatter_add(x, i, u, dnums)

    want = x.copy()
    for b in range(3):
        for j in range(4):
            want[b, idx[b, j, 0]] += upd[b, j]
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(x, idx, upd)), want, rtol=1e-6)


_HLO_SCATTER = """HloModule s
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[5,3] parameter(0)
  i = $ITYPE parameter(1)
  u = $UTYPE parameter(2)
  ROOT s = f32[5,3] scatter(x, i, u), $DNUMS, to_apply=add
}
"""


@pytest.mark.parametrize("itype,utype,dnums,indices", [
    ("u8[1,4]", "f32[4,3]", "update_window_dims={1}, inserted_window_dims={0}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=0",
     np.array([[4, 0, 4, 9]], np.uint8)),
    ("s64[2,2]", "f32[2,2,3]", "update_window_dims={2}, inserted_window_dims={0}, "
     "scatter_dims_to_operand_dims={0}, index_vector_dim=2",
     np.array([[1, -1], [3, 1]], np.int64)),
])
def test_index_vector_dim_against_the_evaluator(itype, utype, dnums, indices):
    text = _HLO_SCATTER.replace("$ITYPE", itype).replace("$UTYPE", utype).replace(
        "$DNUMS", dnums)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    u_dims = [int(d) for d in utype[4:-1].split(",")]
    u = rng.standard_normal(u_dims).astype(np.float32)
    want = evaluate_module(parse_module(text), [x, indices, u])
    want = want[0] if isinstance(want, (list, tuple)) else want
    exe = CpuBackend().compile(optimize(parse_module(text), CompileOptions(backend="cpu")))
    assert "EVALUATOR THUNK" not in exe.as_text()
    got = exe.execute([x, indices, u])
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_embedding_gradient():
    rng = np.random.default_rng(4)
    table = rng.standard_normal((50, 8)).astype(np.float32)
    tokens = rng.integers(0, 50, size=(6, 5)).astype(np.int32)

    def loss(t):
        return jnp.sum(jnp.tanh(t[tokens]))

    g = np.asarray(minijax.jit(minijax.grad(loss))(table))
    want = np.zeros((50, 8))
    for tok in tokens.reshape(-1):
        want[tok] += 1 - np.tanh(table[tok].astype(np.float64)) ** 2
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
