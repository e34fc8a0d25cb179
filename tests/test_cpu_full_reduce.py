"""CPU backend: reductions of every dimension to a scalar split into threaded partials."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

from minijax.backends.cpu import CpuBackend, thread_pool  # noqa: E402
from minijax.compiler.codegen.cpu.loops import FULL_REDUCE_MIN  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

NP_TYPES = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "u32": np.uint32,
            "s64": np.int64, "s8": np.int8}


def _module(dims, et, op, init, pre="", name="fr"):
    """x -> reduce(op)(x [pre-op]) over all dims, init `init`."""
    t = f"{et}[" + ",".join(str(d) for d in dims) + "]"
    all_dims = ",".join(str(d) for d in range(len(dims)))
    body = f"x = {t} parameter(0)\n  y = {t} parameter(1)\n"
    val = "x"
    if pre:
        body += f"  v = {t} {pre}(x, y)\n"
        val = "v"
    return parse_module(
        f"HloModule {name}\n"
        f"red {{ a = {et}[] parameter(0)  b = {et}[] parameter(1)  ROOT r = {et}[] {op}(a, b) }}\n"
        f"ENTRY main {{\n  {body}  i = {et}[] constant({init})\n"
        f"  ROOT r = {et}[] reduce({val}, i), dimensions={{{all_dims}}}, to_apply=red\n}}\n")


def _run(module, *args):
    exe = CpuBackend().compile(module)
    return exe, exe.execute(list(args))[0]


def _modes(exe):
    return {k.spec.mode for k in exe.kernels}


@pytest.mark.parametrize("n", [FULL_REDUCE_MIN - 1, FULL_REDUCE_MIN, FULL_REDUCE_MIN + 2049])
def test_sum_sizes_around_threshold(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    exe, got = _run(_module([n], "f32", "add", "0", pre="multiply"), x, y)
    assert ("full_reduce" in _modes(exe)) == (n >= FULL_REDUCE_MIN)
    exact = np.sum(x.astype(np.float64) * y)
    assert got.dtype == np.float32 and got.shape == ()
    assert abs(float(got) - exact) <= 1e-5 * np.sum(np.abs(x.astype(np.float64) * y))


def test_sum_rank2_with_init_and_accuracy():
    dims = (1031, 2053)   # blocks and chunks cross row boundaries
    x = np.random.default_rng(1).random(dims, dtype=np.float32)
    exe, got = _run(_module(dims, "f32", "add", "5.5"), x, x)
    assert "full_reduce" in _modes(exe)
    exact = x.astype(np.float64).sum() + 5.5
    assert abs(float(got) - exact) / exact < 1e-6


def test_sum_float32_accuracy_1e7():
    n = 10 ** 7
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    _, got = _run(_module([n], "f32", "add", "0"), x, x)
    exact = x.astype(np.float64).sum()
    assert abs(float(got) - exact) / exact < 1e-6


@pytest.mark.parametrize("op,ref", [("maximum", np.max), ("minimum", np.min)])
@pytest.mark.parametrize("where", [0, FULL_REDUCE_MIN // 2 + 3, -1, None])
def test_max_min_nan_propagation(op, ref, where):
    n = FULL_REDUCE_MIN + 77
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    if where is not None:
        x[where] = np.nan
    init = "-inf" if op == "maximum" else "inf"
    exe, got = _run(_module([n], "f32", op, init), x, x)
    assert "full_reduce" in _modes(exe)
    if where is None:
        assert got == ref(x)
    else:
        assert np.isnan(got)


def test_max_of_all_minus_inf_and_init():
    n = FULL_REDUCE_MIN
    x = np.full(n, -np.inf, np.float32)
    _, got = _run(_module([n], "f32", "maximum", "-inf"), x, x)
    assert got == -np.inf
    _, got = _run(_module([n], "f32", "maximum", "7"), x, x)
    assert got == 7.0


@pytest.mark.parametrize("et,op,init", [
    ("s32", "add", "3"), ("u32", "add", "0"), ("s64", "add", "0"), ("s8", "add", "0"),
    ("s32", "maximum", "-2147483648"), ("s32", "minimum", "2147483647"),
    ("u32", "maximum", "0"), ("u32", "minimum", "4294967295"),
    ("s32", "multiply", "1"), ("s32", "and", "-1"), ("u32", "or", "0"), ("s32", "xor", "0"),
])
def test_integer_reductions_wrap(et, op, init):
    n = FULL_REDUCE_MIN + 5
    dt = NP_TYPES[et]
    info = np.iinfo(dt)
    rng = np.random.default_rng(5)
    if op == "multiply":
        x = rng.choice(np.array([1, -1, 3, 1, 1, 1, 1, 1], dt), n)
    else:
        x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    exe, got = _run(_module([n], et, op, init), x, x)
    assert "full_reduce" in _modes(exe)
    red = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum,
           "multiply": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor}[op]
    with np.errstate(over="ignore"):
        want = red(red.reduce(x, dtype=dt), dt(int(init)))
    assert got.dtype == dt and got == want


def test_size_zero_and_small():
    x = np.zeros(0, np.float32)
    _, got = _run(_module([0], "f32", "add", "2"), x, x)
    assert got == 2.0
    x = np.zeros((0, 5), np.int32)
    _, got = _run(_module([0, 5], "s32", "maximum", "-4"), x, x)
    assert got == -4


def test_deterministic_across_runs_and_thread_counts(monkeypatch):
    n = 3 * FULL_REDUCE_MIN + 12345
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(n) * 1e4).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    module = _module([n], "f32", "add", "0", pre="multiply")
    exe, first = _run(module, x, y)
    runs = [exe.execute([x, y])[0] for _ in range(5)]
    assert all(r.tobytes() == first.tobytes() for r in runs)
    for threads in (1, 3):
        monkeypatch.setattr(thread_pool, "_pool", thread_pool.ThreadPool(threads))
        _, got = _run(_module([n], "f32", "add", "0", pre="multiply", name=f"t{threads}"),
                      x, y)
        assert got.tobytes() == first.tobytes()


def test_multi_output_and_transposed_operand():
    """Two reduces in one fusion (a tuple root) over a transposed, broadcast operand."""
    m, n = 1100, 1000
    text = f"""HloModule multi
add_f {{ a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }}
max_f {{ a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] maximum(a, b) }}
fused {{
  p = f32[{m},{n}] parameter(0)
  q = f32[{n}] parameter(1)
  t = f32[{n},{m}] transpose(p), dimensions={{1,0}}
  bq = f32[{n},{m}] broadcast(q), dimensions={{0}}
  v = f32[{n},{m}] multiply(t, bq)
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  s = f32[] reduce(v, z), dimensions={{0,1}}, to_apply=add_f
  mx = f32[] reduce(v, ninf), dimensions={{0,1}}, to_apply=max_f
  ROOT out = (f32[], f32[]) tuple(s, mx)
}}
ENTRY main {{
  x = f32[{m},{n}] parameter(0)
  y = f32[{n}] parameter(1)
  ROOT f = (f32[], f32[]) fusion(x, y), kind=kInput, calls=fused
}}
"""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((m, n), dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    exe = CpuBackend().compile(parse_module(text))
    assert "full_reduce" in _modes(exe)
    s, mx = exe.execute([x, y])
    v = x.astype(np.float64).T * y[:, None]
    assert abs(float(s) - v.sum()) <= 1e-5 * np.abs(v).sum()
    assert mx == (x.T * y[:, None]).max()


def test_through_jit():
    import minijax as jax
    import minijax.numpy as jnp

    n = FULL_REDUCE_MIN * 2 + 3
    rng = np.random.default_rng(8)
    x, y, z = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    f = jax.jit(lambda x, y, z: (jnp.sum(x + y * z), jnp.max(x), jnp.mean(z)))
    s, mx, mean = (np.asarray(v) for v in f(x, y, z))
    w = x.astype(np.float64) + y.astype(np.float64) * z
    assert abs(float(s) - w.sum()) <= 1e-5 * np.abs(w).sum()
    assert mx == x.max()
    np.testing.assert_allclose(mean, z.astype(np.float64).mean(), rtol=1e-4, atol=1e-6)
    xi = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    assert np.asarray(jax.jit(jnp.sum)(xi)) == xi.sum(dtype=np.int32)
