"""Fusion's work stays linear in the program size, on the graph shapes that made it
superlinear, and the incremental bookkeeping gives the same results as the unfused program.

The work is counted, not timed (deterministic on a loaded machine): instructions copied into
fusions, emission counts computed, sibling pairs examined, and the user index's rebuilds,
queries and local reorders. Each program is fused at sizes n and 4n; every count may grow at
most 6x (linear with a generous margin; the quadratic behaviours grew 16x).

- data movement rounds (benchmarks/large_graph_compile.py): sibling merging rebuilt the
  index and sorted the whole program after every merge, and searched the whole program for
  a path between every candidate pair;
- scalar arithmetic with fan-out (numpyro's parameter updates): every scalar producer was
  copied into every fusion downstream, up to the fusion size cap;
- chains of random draws: threefry's ~120 multi-user integer ops per call were copied into
  many consumers and cut into dozens of kernels; it is now one fusion node.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import random
from minijax.backends import get_backend
from minijax.compiler.driver import compile_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.verifier import verify_module
from minijax.compiler.options import CompileOptions
from minijax.compiler.passes.fusion import (
    MAX_SIBLING_DISTANCE,
    MAX_SIBLING_ROUNDS,
    MAX_SIBLING_WINDOW,
    Fusion,
)
from minijax.lax.threefry import threefry2x32, threefry2x32_reference
from minijax.test_util import evaluate_lowered

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
try:
    import large_graph_compile as bench
finally:
    sys.path.pop(0)


def _fusion_work(f, *args) -> dict:
    """Run the fusion pass on f's lowered module; the work it counted."""
    module = minijax.jit(f).lower(*args).module
    size = len(module.entry.instructions)
    fusion = Fusion()
    fusion.run(module)
    verify_module(module)
    fusions = [i for c in module.computations for i in c.instructions
               if i.opcode == "fusion"]
    return {
        "fused instructions": sum(len(f.called["calls"].instructions) for f in fusions),
        "fuse steps": sum(1 for line in module.fusion_log if line.startswith("fuse ")),
        "emission counts": fusion.size_checks,
        "sibling pairs": fusion.pair_checks,
        "index rebuilds": sum(i.rebuild_work for i in fusion.indexes),
        "index queries": sum(i.queries for i in fusion.indexes),
        "reorders": sum(i.reorder_work for i in fusion.indexes),
        "kernels": len([i for i in module.entry.instructions if i.opcode == "fusion"]),
        "merges": sum(1 for line in module.fusion_log if line.startswith("merge sibling")
                      or "as an extra output" in line),
        "reads": sum(len(i.operands) for i in module.entry.instructions),
        "instructions": size,
    }


_GROWTH_CHECKED = ("fused instructions", "fuse steps", "emission counts", "index rebuilds",
                   "kernels")


def _assert_linear(make, n, *args, keys=None):
    small, large = _fusion_work(make(n), *args), _fusion_work(make(4 * n), *args)
    for key in keys or _GROWTH_CHECKED:
        assert large[key] <= 6 * small[key] + 64, (key, small, large)
    # User queries: a few per instruction and per fuse step (sibling sweeps query each
    # instruction once per round; at small sizes fewer rounds run).
    for work in (small, large):
        assert work["index queries"] <= ((MAX_SIBLING_ROUNDS + 1) * work["instructions"]
                                         + 2 * work["fuse steps"]), work
    # Per merge, sibling fusion reorders at most the instructions between the two
    # siblings, which are never more than MAX_SIBLING_DISTANCE apart.
    for work in (small, large):
        assert work["reorders"] <= work["merges"] * (MAX_SIBLING_DISTANCE + 3), work
    return small, large


def test_data_movement_rounds_fuse_in_linear_work():
    # Sibling pairs grow faster until the readers of one input fill the window of
    # MAX_SIBLING_WINDOW: checked per reader instead.
    small, large = _assert_linear(bench.make_program, 10, *bench.inputs())
    for work in (small, large):
        assert work["sibling pairs"] <= (MAX_SIBLING_ROUNDS * MAX_SIBLING_WINDOW
                                         * (work["reads"] + 64 * work["merges"])), work


def _scalar_fan_out(n):
    def f(x, v):
        s, total = x, jnp.zeros_like(v)
        for i in range(n):
            s = s * 1.0001 + 0.001 * (i % 3)      # cheap scalar chain, two users per step
            total = total + v * s
        return total, s
    return f


def test_scalar_fan_out_fuses_in_linear_work():
    args = (np.float32(0.5), np.linspace(-1, 1, 50, dtype=np.float32))
    small, large = _assert_linear(_scalar_fan_out, 12, *args)
    # no fusion copies the whole scalar chain above it
    assert large["fused instructions"] < 40 * 48, large


def test_scalar_fan_out_matches_the_evaluator():
    args = (np.float32(0.5), np.linspace(-1, 1, 50, dtype=np.float32))
    f = _scalar_fan_out(30)
    want = evaluate_lowered(f, *args)
    got = minijax.jit(f)(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)


def _draws(n):
    def f(key):
        total = jnp.zeros((3,), jnp.float32)
        for _ in range(n):
            key, sub = random.split(key)
            total = total + random.normal(sub, (3,))
        return total
    return f


def test_random_draws_fuse_in_linear_work_and_few_kernels():
    key = random.PRNGKey(0)
    small, large = _assert_linear(_draws, 3, key)
    # per draw: the two threefry fusions, the key's slices and the normal (was ~70); the
    # normal's erf_inv repeats XLA's float32 rounding with float64 fused multiply-adds
    # (random/xla_f32.py), a few more kernels
    assert large["kernels"] <= 16 * 15, large


def test_random_draws_match_the_evaluator_bit_for_bit():
    key = random.PRNGKey(7)
    f = _draws(2)
    want = evaluate_lowered(f, key)[0]
    got = np.asarray(minijax.jit(f)(key))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    bits = np.asarray(minijax.jit(lambda k: random.bits(random.split(k, 3)[2], (5,)))(key))
    np.testing.assert_array_equal(bits, evaluate_lowered(
        lambda k: random.bits(random.split(k, 3)[2], (5,)), key)[0])


@settings(max_examples=12, deadline=None)
@given(shape=st.sampled_from([(), (1,), (3,), (2, 5)]),
       same=st.sampled_from(["none", "keys", "counters", "all"]),
       seed=st.integers(0, 2 ** 31 - 1))
def test_threefry_fusion_matches_the_reference(shape, same, seed):
    """The fused threefry (operands deduplicated, scalars broadcast inside) gives the
    reference bits, also when one value is passed for several operands."""
    rng = np.random.default_rng(seed)
    k0, k1, x0, x1 = (rng.integers(0, 2 ** 32, size=shape, dtype=np.uint32)
                      for _ in range(4))

    def f(k0, k1, x0, x1):
        if same in ("keys", "all"):
            k1 = k0
        if same in ("counters", "all"):
            x1 = x0 if same == "counters" else k0
        return threefry2x32(k0, k1, x0, x1)

    got = [np.asarray(v) for v in minijax.jit(f)(k0, k1, x0, x1)]
    if same in ("keys", "all"):
        k1 = k0
    if same in ("counters", "all"):
        x1 = x0 if same == "counters" else k0
    want = threefry2x32_reference(k0, k1, x0, x1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.broadcast_to(w, shape))


def test_threefry_with_scalar_key_and_array_counter_matches_the_reference():
    k = np.uint32(0x12345678)
    x = np.arange(6, dtype=np.uint32)
    got = minijax.jit(lambda k, x: threefry2x32(k, k ^ np.uint32(3), x, x + 1))(k, x)
    want = threefry2x32_reference(k, k ^ np.uint32(3), x, x + 1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)


@settings(max_examples=10, deadline=None)
@given(readers=st.integers(2, 12), chain=st.integers(0, 4), seed=st.integers(0, 1000))
def test_sibling_merges_keep_results_and_order(readers, chain, seed):
    """Many fusions reading one input (siblings), with dependencies between some of them
    and reductions among them: the incremental merge keeps a valid order (the verifier
    checks it) and the values of the unfused program."""
    rng = np.random.default_rng(seed)
    ops = [jnp.sin, jnp.cos, jnp.tanh, lambda v: v * 1.5, jnp.abs, jnp.exp]
    picks = rng.integers(0, len(ops), size=readers)
    links = rng.integers(0, 2, size=readers)

    def f(x):
        outs = []
        for k in range(readers):
            y = ops[picks[k]](x)
            if links[k] and outs and chain:
                y = y + outs[-1][:1].sum() * 0.1 if k % 2 else y * outs[-1]
            outs.append(y if k % 3 else y.sum(axis=-1, keepdims=True) + x)
        return outs

    x = rng.standard_normal((4, 8)).astype(np.float32)
    want = evaluate_lowered(f, x)
    module = minijax.jit(f).lower(x).module
    Fusion().run(module)
    verify_module(module)
    got = minijax.jit(f)(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5)


def test_sibling_fusion_still_merges_readers_of_one_input():
    def f(x):
        return jnp.sin(x).sum(axis=1), jnp.cos(x).sum(axis=1), (x * x).sum(axis=1)

    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    module = minijax.jit(f).lower(x).module
    Fusion().run(module)
    merges = [line for line in module.fusion_log if line.startswith("merge sibling")]
    assert len(merges) == 2, module.fusion_log
    want = evaluate_lowered(f, x)
    for g, w in zip(minijax.jit(f)(x), want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)


@pytest.mark.parametrize("n", [40])
def test_dead_duplicated_producers_do_not_root_fusions(n):
    """A chain of two-user cheap ops fused into one consumer leaves no originals behind
    that would each root a fusion copying their ancestry."""
    def f(x):
        a, b = x, x + 1.0
        for _ in range(n):
            a, b = a + b, a * 0.5 - b
        return a + b

    x = np.linspace(0, 1, 8, dtype=np.float32)
    work = _fusion_work(f, x)
    assert work["kernels"] == 1, work
    np.testing.assert_allclose(np.asarray(minijax.jit(f)(x)), evaluate_lowered(f, x)[0],
                               rtol=1e-5)


_SHARED_OPERAND = """HloModule shared_operand
body {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  c = u32[] parameter(2)
  d = u32[] parameter(3)
  s = u32[] add(a, c)
  t = u32[] multiply(b, d)
  ROOT r = (u32[], u32[]) tuple(s, t)
}
ENTRY e {
  x = u32[] parameter(0)
  y = u32[] parameter(1)
  k = u32[] constant(7)
  f = (u32[], u32[]) fusion(x, y, k, k), kind=kLoop, calls=body
  g0 = u32[] get-tuple-element(f), index=0
  g1 = u32[] get-tuple-element(f), index=1
  ROOT out = (u32[], u32[]) tuple(g0, g1)
}
"""


def test_a_producer_passed_twice_to_a_fusion_is_fused_for_both_parameters():
    # CSE merges two equal constants feeding one fusion: fusing the producer must replace
    # both parameters (one left behind read a removed instruction: the pass crashed).
    exe, optimized = compile_module(parse_module(_SHARED_OPERAND), get_backend("cpu"),
                                    CompileOptions(backend="cpu"))
    verify_module(optimized)
    out = exe.execute([np.uint32(5), np.uint32(6)])
    assert [int(np.asarray(v)) for v in out] == [12, 42]


def test_jitted_fold_in_of_zero_matches_jax():
    # JAX 0.10.2: jax.random.fold_in(jax.random.PRNGKey(7), 0)
    want = np.array([3625411723, 1954958720], np.uint32)
    got = minijax.jit(lambda k: random.fold_in(k, 0))(random.PRNGKey(7))
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(random.fold_in(random.PRNGKey(7), 0)), want)
