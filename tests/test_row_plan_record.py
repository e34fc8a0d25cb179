"""The row-fusion pass records its plan on the fused computation (Computation.row_plan) and
the code generators (CPU and GPU) run the recorded plan (hlo/row_plan.plan_for) instead of
re-deriving it; a computation without a record (parsed from HLO text, loaded from an older
disk-cache entry) is decided once, from its structure, in row_plan.py."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="code generation needs llvmlite")

import llvmlite.ir as ir  # noqa: E402

import minijax  # noqa: E402
from minijax import lax  # noqa: E402
from minijax.compiler.codegen.cpu.loops import emit_kernel  # noqa: E402
from minijax.compiler.codegen.gpu.emulate import run_computation  # noqa: E402
from minijax.compiler.codegen.gpu.kernels import emit_gpu_kernel  # noqa: E402
from minijax.compiler.codegen.gpu.nvvm import new_module  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402
from minijax.compiler.hlo.printer import module_to_text  # noqa: E402
from minijax.compiler.hlo.row_plan import RowPlan, plan_for, row_fusion_plan  # noqa: E402
from minijax.compiler.options import CompileOptions  # noqa: E402
from minijax.compiler.persistent_cache import DiskCache  # noqa: E402
from minijax.compiler.pipeline import optimize  # noqa: E402


def _softmax(x):
    m = lax.reduce_max(x, (1,))
    e = lax.exp(x - lax.broadcast_in_dim(m, x.shape, (0,)))
    return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), x.shape, (0,))


def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


X = np.random.default_rng(0).standard_normal((7, 45)).astype(np.float32)


def _optimized():
    return optimize(minijax.jit(_softmax).lower(X).module, CompileOptions())


def _row_fused_bodies(module):
    return [i.called["calls"] for c in module.reachable_computations()
            for i in c.instructions if i.opcode == "fusion"
            and isinstance(i.called["calls"].row_plan, RowPlan)]


def _cpu_mode(comp):
    return emit_kernel(ir.Module("t"), "k", comp).mode


def _gpu_mode(comp):
    return emit_gpu_kernel(new_module("k"), "k", comp).mode


def _same_plan(a: RowPlan, b: RowPlan) -> bool:
    def names(groups):
        return [[i.name for i in g] for g in groups]
    return (a.rows, a.cols, names(a.passes), names(a.row_values), [o.name for o in a.outputs]) \
        == (b.rows, b.cols, names(b.passes), names(b.row_values), [o.name for o in b.outputs])


def test_pass_records_its_plan_and_codegen_runs_it():
    module = _optimized()
    (body,) = _row_fused_bodies(module)
    recorded = body.row_plan
    assert plan_for(body) is recorded            # read, not recomputed
    assert _same_plan(recorded, row_fusion_plan(body))
    assert _cpu_mode(body) == "row_fused" and _gpu_mode(body) == "row_fused"
    # Other fusions (none here) and the entry carry no plan.
    assert module.entry.row_plan is None


def test_codegen_obeys_a_recorded_no_plan_decision():
    """A recorded "no row fusion" decision wins over the structure, on both targets: the
    kernels then compute the same values another way (inline reductions)."""
    module = _optimized()
    (body,) = _row_fused_bodies(module)
    body.row_plan = "vetoed by the test"
    assert plan_for(body) is None
    assert _cpu_mode(body) != "row_fused" and _gpu_mode(body) != "row_fused"
    (got,) = run_computation(body, [X])
    np.testing.assert_allclose(got, _np_softmax(X), rtol=2e-5, atol=1e-6)
    (want,) = evaluate_module(module, [X])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_parsed_module_is_decided_once_from_its_structure():
    optimized = _optimized()
    (body,) = _row_fused_bodies(optimized)
    parsed = parse_module(module_to_text(optimized))
    fusions = [i.called["calls"] for i in parsed.entry.instructions if i.opcode == "fusion"]
    assert fusions and all(c.row_plan is None for c in fusions)
    plans = [plan_for(c) for c in fusions]
    (derived,) = [p for p in plans if p is not None]
    assert _same_plan(derived, body.row_plan)
    decided = [c for c in fusions if c.row_plan is not None]
    assert decided == fusions                    # recorded, so later reads do not recompute
    assert [plan_for(c) for c in fusions] == plans
    # A fusion that is no row fusion records why.
    wrapped = parse_module("""HloModule m
ENTRY e {
  p = f32[4,8] parameter(0)
  ROOT n = f32[4,8] negate(p)
}""").entry
    assert plan_for(wrapped) is None and isinstance(wrapped.row_plan, str)


def test_plan_survives_the_disk_cache(tmp_path):
    module = _optimized()
    cache = DiskCache(str(tmp_path))
    assert cache.store("f" * 64, module) and cache.stats.write_errors == 0
    loaded = cache.load("f" * 64)
    assert loaded is not None and cache.stats.hits == 1
    (body,) = _row_fused_bodies(loaded)
    members = {id(i) for i in body.instructions}
    plan = body.row_plan
    assert all(id(i) in members for g in plan.passes + plan.row_values for i in g)
    assert all(id(o) in members for o in plan.outputs)
    assert _same_plan(plan, row_fusion_plan(body))
    assert _cpu_mode(body) == "row_fused"


def test_computation_pickled_without_a_plan_is_decided_on_use():
    """Entries written before Computation.row_plan existed unpickle with the class default."""
    module = _optimized()
    (body,) = _row_fused_bodies(module)
    old = pickle.loads(pickle.dumps(body))
    del old.__dict__["row_plan"]
    assert old.row_plan is None
    assert _same_plan(plan_for(old), body.row_plan)
