"""Long elementwise loop bodies are interleaved twice (llvm.loop metadata on the back edge);
short ones are left to LLVM's own choice. Values are checked against the HLO evaluator and
NumPy, so a malformed hint (LLVM rejects a loop node that does not name itself) or a wrong
interleaved loop fails here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llvmlite")

from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

HINT = '!"llvm.loop.interleave.count", i32 2'

GELU = """HloModule gelu
fused {{
  x = f32[{n}] parameter(0)
  c3 = f32[] constant(0.044715)
  k = f32[] constant(0.7978846)
  half = f32[] constant(0.5)
  one = f32[] constant(1)
  x2 = f32[{n}] multiply(x, x)
  x3 = f32[{n}] multiply(x2, x)
  t3 = f32[{n}] multiply(x3, f32[{n}] broadcast(c3), dimensions={{}})
  inner = f32[{n}] multiply(f32[{n}] add(x, t3), f32[{n}] broadcast(k), dimensions={{}})
  th = f32[{n}] tanh(inner)
  hx = f32[{n}] multiply(x, f32[{n}] broadcast(half), dimensions={{}})
  ROOT r = f32[{n}] multiply(hx, f32[{n}] add(th, f32[{n}] broadcast(one), dimensions={{}}))
}}
ENTRY main {{
  p = f32[{n}] parameter(0)
  ROOT f = f32[{n}] fusion(p), kind=kLoop, calls=fused
}}
"""

ADD = """HloModule add
ENTRY main {{
  a = f32[{n}] parameter(0)
  b = f32[{n}] parameter(1)
  ROOT s = f32[{n}] add(a, b)
}}
"""

SOFTMAX_ROWS = """HloModule rows
max_f32 {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}}
add_f32 {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY main {{
  x = f32[{r},{c}] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[{r}] reduce(x, ninf), dimensions={{1}}, to_apply=max_f32
  d = f32[{r},{c}] subtract(x, f32[{r},{c}] broadcast(m), dimensions={{0}})
  e = f32[{r},{c}] exponential(d)
  s = f32[{r}] reduce(e, zero), dimensions={{1}}, to_apply=add_f32
  ROOT y = f32[{r},{c}] tanh(f32[{r},{c}] divide(e, f32[{r},{c}] broadcast(s), dimensions={{0}}))
}}
"""


def _compile(text):
    exe = CpuBackend().compile(parse_module(text))
    assert not exe.evaluator_thunks(), exe.as_text()
    return exe


def _gelu64(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(0.7978846 * (x + 0.044715 * x ** 3)))


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 300), seed=st.integers(0, 2 ** 16))
def test_interleaved_gelu_matches_numpy_at_every_length(n, seed):
    # lengths around the vector width times the interleave count exercise the remainder loop
    x = (np.random.default_rng(seed).standard_normal(n) * 4).astype(np.float32)
    exe = _compile(GELU.format(n=n))
    assert HINT in exe.llvm_ir()
    got = np.asarray(exe.execute([x])[0])
    # atol: 1 + tanh(u) cancels where tanh is near -1 (float32 rounding of the formula itself)
    np.testing.assert_allclose(got, _gelu64(x), rtol=3e-6, atol=1e-6)


def test_short_bodies_get_no_hint():
    exe = _compile(ADD.format(n=1000))
    assert "llvm.loop" not in exe.llvm_ir()
    a, b = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    np.testing.assert_array_equal(np.asarray(exe.execute([a, b])[0]), a + b)


@pytest.mark.parametrize("rows,cols", [(3, 7), (5, 64), (4, 1000)])
def test_row_fusion_columns_interleaved_match_evaluator(rows, cols):
    text = SOFTMAX_ROWS.format(r=rows, c=cols)
    x = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32)
    exe = _compile(text)
    assert HINT in exe.llvm_ir()
    got = np.asarray(exe.execute([x])[0])
    want = np.asarray(evaluate_module(parse_module(text), [x])[0])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-9)
