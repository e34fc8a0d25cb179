"""jit: results, cache behaviour and explanations, Lowered/Compiled, dumps (any backend)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import minijax as jax
from minijax import lax


def _sum_xyz(x, y, z):
    return lax.reduce_sum(lax.add(x, lax.mul(y, z)), (0,))


def test_jit_matches_eager_and_counts_hits():
    f = jax.jit(_sum_xyz)
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(100).astype(np.float32) for _ in range(3))
    expected = np.sum(x.astype(np.float64) + y.astype(np.float64) * z)
    for _ in range(3):
        np.testing.assert_allclose(float(f(x, y, z)), expected, rtol=1e-5)
    stats = f.cache_stats
    assert (stats.compiles, stats.hits) == (1, 2)


def test_new_shape_recompiles_and_explains_which_dimension():
    # A fresh function: jit caches on the function, and another test compiled _sum_xyz.
    f = jax.jit(lambda x, y, z: _sum_xyz(x, y, z))
    a = np.ones(4, np.float32)
    f(a, a, a)
    b = np.ones(5, np.float32)
    assert float(f(b, b, b)) == 10.0
    reason = f.cache_stats.history[-1]
    assert "argument x" in reason and "dim 0: 4 -> 5" in reason


def test_weak_type_change_is_explained():
    f = jax.jit(lambda x, s: lax.mul(x, s))
    x = np.ones(3, np.float32)
    f(x, 2.0)
    f(x, np.float32(2.0))
    assert "weak type" in f.cache_stats.history[-1]


def test_static_args_and_unhashable_static_error():
    def f(x, n):
        return lax.mul(x, float(n))
    g = jax.jit(f, static_argnums=1)
    x = np.ones(2, np.float32)
    assert np.asarray(g(x, 3)).tolist() == [3.0, 3.0]
    g(x, 4)
    assert "static argument arg1: 3 -> 4" in g.cache_stats.history[-1]
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda x, d: x, static_argnums=1)(x, {"a": 1})
    h = jax.jit(f, static_argnames="n")
    assert np.asarray(h(x, n=5)).tolist() == [5.0, 5.0]


def test_pytrees_kwargs_and_closures():
    w = np.full(3, 2.0, np.float32)

    @jax.jit
    def f(params, *, scale):
        return {"out": lax.mul(lax.mul(params["a"], w), scale), "b": params["b"]}
    out = f({"a": np.ones(3, np.float32), "b": np.zeros(2, np.float32)}, scale=3.0)
    assert np.asarray(out["out"]).tolist() == [6.0, 6.0, 6.0]
    assert out["b"].shape == (2,)


def test_lower_and_compile_text_show_one_fusion_for_fused_sum():
    x = np.ones(1024, np.float32)
    lowered = jax.jit(_sum_xyz).lower(x, x, x)
    assert "ENTRY" in lowered.as_text() and "reduce(" in lowered.as_text()
    compiled = lowered.compile()
    text = compiled.as_text()
    entry = text[text.index("ENTRY"):]
    assert entry.count(" fusion(") == 1
    assert "multiply" not in entry.split("fusion(")[0].split("ENTRY")[1]
    memory = compiled.memory_analysis()
    assert memory.argument_size_in_bytes == 3 * 4096
    assert memory.temp_size_in_bytes == 0
    assert memory.peak_memory_in_bytes > 0
    cost = compiled.cost_analysis()
    assert cost["flops"] >= 2 * 1024
    assert float(compiled(x, x, x)) == 2048.0


def test_jit_under_grad_and_vmap_and_nested_jit():
    f = jax.jit(lambda x: lax.reduce_sum(lax.mul(lax.sin(x), x), (0,)))
    x = np.linspace(0, 1, 4).astype(np.float32)
    expected = np.cos(x) * x + np.sin(x)
    np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), expected, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(f))(x)), expected, rtol=1e-5)
    batched = jax.vmap(f)(np.stack([x, 2 * x]))
    assert batched.shape == (2,)
    outer = jax.jit(lambda x: lax.mul(f(x), 2.0))
    np.testing.assert_allclose(float(outer(x)), 2 * np.sum(np.sin(x) * x), rtol=1e-5)


def test_disable_jit_runs_eagerly_with_same_result():
    calls = []

    def f(x):
        calls.append(type(x).__name__)
        return lax.sin(x)
    g = jax.jit(f)
    x = np.ones(3, np.float32)
    with jax.disable_jit():
        eager = g(x)
    assert calls == ["ndarray"]
    np.testing.assert_allclose(np.asarray(eager), np.asarray(g(x)), rtol=1e-6)


def test_clear_caches_forces_recompile():
    f = jax.jit(lambda x: lax.neg(x))
    x = np.ones(2, np.float32)
    f(x)
    jax.clear_caches()
    f(x)
    assert f.cache_stats.compiles == 2


def test_debug_log_and_dumps(tmp_path):
    script = (
        "import numpy as np, minijax as jax\n"
        "from minijax import lax\n"
        "def fused(x):\n"
        "    return lax.reduce_sum(lax.mul(lax.sin(x), x), (0,))\n"
        "jax.jit(fused)(np.ones(8, np.float32))\n")
    env = dict(os.environ, MINIJAX_DEBUG="1",
               MINIJAX_FLAGS=f"--dump_to={tmp_path} --dump_as_dot")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True)
    assert "compiled fused" in result.stderr and "first call" in result.stderr
    names = sorted(os.listdir(tmp_path))
    assert "index.txt" in names
    assert any(n.endswith("fused.before_optimizations.hlo") for n in names)
    assert any(n.endswith("fused.after_optimizations.hlo") for n in names)
    assert any(n.endswith("fused.dot") for n in names)
    assert any(n.endswith("fused.options.txt") for n in names)
    assert "fused" in (tmp_path / "index.txt").read_text()


def test_unknown_flag_is_rejected_with_its_name():
    from minijax.compiler.dumps import parse_flags
    with pytest.raises(ValueError, match="--dump_too"):
        parse_flags("--dump_too=/tmp")


def test_broadcast_in_dim_expanding_size_one_dims_lowers():
    f = jax.jit(lambda x: lax.broadcast_in_dim(x, (3, 4, 5), (0, 2)))
    x = np.arange(5.0, dtype=np.float32).reshape(1, 5)
    np.testing.assert_array_equal(np.asarray(f(x)), np.broadcast_to(x[:, None, :], (3, 4, 5)))


def test_scalar_chain_with_shared_subexpressions_compiles_quickly():
    # 40 rounds of x = x*x + x: each value is used twice; re-emitting shared rank-0 values
    # per use would make code size exponential in the depth.
    def f(x):
        for _ in range(40):
            x = lax.add(lax.mul(x, x), x)
        return x
    out = jax.jit(f)(np.float32(0.0))
    assert float(out) == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float64])
def test_numpy_arguments_take_the_cached_fast_path_and_are_copied(dtype):
    """NumPy arguments of mode-independent dtypes hit the fast path (one compile, later
    calls are hits); results match NumPy; mutating the argument afterwards changes neither
    an earlier result nor one aliasing the input (jit(identity))."""
    f = jax.jit(lambda x, y: lax.add(x, y) if x.dtype != np.bool_ else lax.bitwise_or(x, y))
    identity = jax.jit(lambda x: x)
    a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    b = np.ones((2, 3), dtype)
    expected = (a | b) if dtype is np.bool_ else a + b
    for _ in range(3):
        out = f(a, b)
        np.testing.assert_array_equal(np.asarray(out), expected.astype(out.dtype))
    assert f.cache_stats.compiles == 1 and f.cache_stats.hits == 2
    if np.dtype(dtype) != np.float64:
        assert len(f._cache.fast) == 1
    same = identity(a)
    before = np.asarray(same).copy()
    a[0, 0] = 2
    np.testing.assert_array_equal(np.asarray(same), before)
    np.testing.assert_array_equal(np.asarray(out), expected.astype(out.dtype))


def test_numpy_float64_argument_follows_the_x64_mode(x64):
    """float64 NumPy arguments stay off the fast path: their canonical dtype depends on
    jax_enable_x64, so toggling the mode must not reuse an entry of the other mode."""
    f = jax.jit(lambda x: x * 2)
    a = np.full(3, 1.0 + 2.0 ** -40)
    assert f(a).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(f(a)), a * 2)
    assert len(f._cache.fast) == 0


def test_array_methods_named_like_tracer_internals_work_under_jit_and_grad():
    """Every Array method is reachable on traced values: no tracer attribute may shadow one
    (JaxprTracer's `var` slot once hid `x.var()` under jit)."""
    from minijax import core

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    public = {n for n in dir(jax.Array) if not n.startswith("_")}
    for cls in subclasses(core.Tracer):
        assert not public & set(getattr(cls, "__slots__", ())), cls
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: x.var(-1))(x)), x.var(-1),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda x: x.var())(x)),
                               2 * (x - x.mean()) / x.size, rtol=1e-5)
