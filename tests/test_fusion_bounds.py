"""Fusion bounds the work per kernel and stays linear on large graphs of data movement.

`fusion_cost.emission_counts` is checked against what the elemental emitter does (an
elementwise diamond is emitted once, two slices of one array twice, a concatenate chain
doubles); then a program of n rounds of slices, transposes and concatenates (the shape
that used to fuse into kernels whose code doubled with every round) is fused at two sizes:
every kernel stays within the bounds, and the work counted (fused instructions, emission
counts computed) grows linearly with n. Counting work, not time, keeps
this deterministic on a loaded machine.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from test_passes_common import hlo

import minijax
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.passes.fusion import Fusion
from minijax.compiler.passes.fusion_cost import (
    MAX_EMITTED,
    MAX_FUSED_INSTRUCTIONS,
    emission_counts,
)
from minijax.test_util import evaluate_lowered

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
try:
    import large_graph_compile as bench
finally:
    sys.path.pop(0)


def _body(text):
    return parse_module(hlo(text)).entry


def _counts_by_name(comp):
    total, counts = emission_counts(comp)
    return total, {i.name: counts.get(id(i), 0) for i in comp.instructions}


def test_elementwise_diamond_is_emitted_once():
    comp = _body("""x = f32[8] parameter(0)
a = f32[8] sine(x)
b = f32[8] cosine(x)
ROOT r = f32[8] add(a, b)""")
    total, by = _counts_by_name(comp)
    assert by == {"x": 1, "a": 1, "b": 1, "r": 1} and total == 4


def test_two_slices_read_their_operand_twice_and_concatenates_double():
    comp = _body("""x = f32[8] parameter(0)
s0 = f32[4] slice(x), slice={[0:4]}
s1 = f32[4] slice(x), slice={[4:8]}
c1 = f32[8] concatenate(s1, s0), dimensions={0}
t0 = f32[4] slice(c1), slice={[0:4]}
t1 = f32[4] slice(c1), slice={[2:6]}
ROOT c2 = f32[8] concatenate(t0, t1), dimensions={0}""")
    total, by = _counts_by_name(comp)
    assert by["c2"] == 1 and by["t0"] == by["t1"] == 1
    assert by["c1"] == 2 and by["s0"] == by["s1"] == 2 and by["x"] == 4
    assert total == 1 + 2 + 2 + 4 + 4


def _fuse(n):
    lowered = minijax.jit(bench.make_program(n)).lower(*bench.inputs())
    module = lowered.module
    fusion = Fusion()
    fusion.run(module)
    fusions = [i for i in module.entry.instructions if i.opcode == "fusion"]
    return fusion, fusions


@pytest.mark.parametrize("n", [6])
def test_large_graph_kernels_stay_within_bounds(n):
    _, fusions = _fuse(n)
    for f in fusions:
        body = f.called["calls"]
        assert len(body.instructions) <= MAX_FUSED_INSTRUCTIONS + 1
        # One last step may overshoot (a reused copy), then the fusion stops growing.
        assert emission_counts(body)[0] <= 2 * MAX_EMITTED


def test_large_graph_fusion_work_is_linear():
    """Instructions copied into fusions and emission counts computed grow with n (they
    grew as n^2 when every fusion copied the whole chain of cheap producers above it)."""
    work = {}
    for n in (8, 24):
        fusion, fusions = _fuse(n)
        fused = sum(len(f.called["calls"].instructions) for f in fusions)
        work[n] = (fused, fusion.size_checks)
    for small, large in zip(work[8], work[24]):
        assert large <= 3 * small * 1.5, work   # 3x the rounds: at most 4.5x the work


def test_large_graph_compiles_and_matches_the_evaluator():
    f = bench.make_program(12)
    args = bench.inputs()
    want = evaluate_lowered(f, *args)
    got = minijax.jit(f)(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, atol=1e-6)
