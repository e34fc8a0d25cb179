"""Small entry computations run as one native call on the CPU backend
(backends/cpu/native_entry.py): results against the HLO evaluator and NumPy, and which
programs take that path."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

from thread_runner import run_in_threads  # noqa: E402

import minijax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.pipeline import CompileOptions, optimize  # noqa: E402
from minijax.config import config  # noqa: E402

NATIVE = "entry: one native call"

# Results: a pass-through parameter, a constant, one value twice, a dot, an int result.
PLUMBING = """HloModule plumbing
ENTRY main {
  x = f32[4,3] parameter(0)
  w = f32[3,2] parameter(1)
  k = s32[4] parameter(2)
  c = f32[2] constant({1.5, -2})
  d = f32[4,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  cb = f32[4,2] broadcast(c), dimensions={1}
  e = f32[4,2] add(d, cb)
  t = f32[2,4] transpose(e), dimensions={1,0}
  one = s32[] constant(1)
  ob = s32[4] broadcast(one), dimensions={}
  kk = s32[4] add(k, ob)
  r = f32[12] reshape(x)
  ROOT out = $T tuple(x, c, e, e, t, kk, r)
}
""".replace("$T", "(f32[4,3], f32[2], f32[4,2], f32[4,2], f32[2,4], s32[4], f32[12])")


def _compile(text):
    return CpuBackend().compile(optimize(parse_module(text), CompileOptions(backend="cpu")))


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 3)).astype(np.float32),
            rng.standard_normal((3, 2)).astype(np.float32),
            np.arange(4, dtype=np.int32) * 7 - 9]


def test_entry_runs_as_one_native_call_and_matches_the_evaluator():
    exe = _compile(PLUMBING)
    assert NATIVE in exe.as_text()
    args = _args()
    keep = [a.copy() for a in args]
    got = exe.execute(args)
    want = evaluate_module(parse_module(PLUMBING), [a.copy() for a in args])
    assert len(got) == 7
    for g, w in zip(got, want):
        assert g.dtype == np.asarray(w).dtype and g.shape == np.asarray(w).shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    x, w, k = args
    np.testing.assert_allclose(got[2], x @ w + np.float32([1.5, -2]), rtol=1e-5)
    np.testing.assert_array_equal(got[5], k + 1)
    for a, kept in zip(args, keep):
        np.testing.assert_array_equal(a, kept)           # inputs are not written
    assert got[0] is not args[0] and got[2] is not got[3]  # every result its own buffer


def test_results_of_earlier_calls_are_not_overwritten():
    exe = _compile(PLUMBING)
    first = exe.execute(_args(1))
    saved = [g.copy() for g in first]
    exe.execute(_args(2))
    for g, s in zip(first, saved):
        np.testing.assert_array_equal(g, s)


SORTED = """HloModule sorted
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[5] parameter(0)
  s = f32[5] sort(x), dimensions={0}, to_apply=cmp
  ROOT n = f32[5] negate(s)
}
"""


def test_entry_with_an_evaluator_thunk_keeps_the_step_program():
    exe = _compile(SORTED)
    assert NATIVE not in exe.as_text()
    x = np.array([3, -1, 2, 0.5, 7], np.float32)
    np.testing.assert_array_equal(exe.execute([x])[0], -np.sort(x))


def test_option_off_keeps_the_step_program():
    config.update("minijax_native_loops", False)
    try:
        exe = _compile(PLUMBING)
    finally:
        config.update("minijax_native_loops", True)
    assert NATIVE not in exe.as_text()
    for a, b in zip(exe.execute(_args(3)), _compile(PLUMBING).execute(_args(3))):
        np.testing.assert_array_equal(a, b)


def test_jitted_mlp_layer_and_threads():
    rng = np.random.default_rng(4)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)

    @minijax.jit
    def f(x):
        h = jnp.tanh(x @ w1 + b1)
        return h.sum(axis=1), h.T

    xs = [rng.standard_normal((8, 16)).astype(np.float32) for _ in range(4)]
    plan = f.lower(xs[0]).compile()._entry.executable.as_text()
    assert NATIVE in plan
    want = [(np.tanh(x @ w1 + b1).sum(1), np.tanh(x @ w1 + b1).T) for x in xs]

    def work(seed):
        for k in range(40):
            i = (seed + k) % 4
            s, t = f(xs[i])
            np.testing.assert_allclose(np.asarray(s), want[i][0], rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(np.asarray(t), want[i][1], rtol=1e-5, atol=1e-6)

    run_in_threads(work, 3)


def test_zero_argument_program_and_empty_arrays():
    @minijax.jit
    def f():
        return jnp.arange(5.0) * 2, jnp.zeros((0, 3))

    a, b = f()
    np.testing.assert_array_equal(np.asarray(a), np.arange(5.0, dtype=np.float32) * 2)
    assert np.asarray(b).shape == (0, 3)


def test_disk_cache_replay_rebuilds_the_native_entry(tmp_path):
    old = config._values["minijax_cache_dir"]
    config.update("minijax_cache_dir", str(tmp_path))
    try:
        first = _compile(PLUMBING)
        second = _compile(PLUMBING)      # from the stored plan and object file
    finally:
        config.update("minijax_cache_dir", old)
    assert NATIVE in second.as_text() and second.llvm_ir() == ""
    for a, b in zip(first.execute(_args(5)), second.execute(_args(5))):
        np.testing.assert_array_equal(a, b)
