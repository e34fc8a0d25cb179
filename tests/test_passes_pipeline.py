"""The pipeline (levels, fixed points, verification, timings, dumps, debug printing), and
the small passes it runs: call inlining and layout assignment."""

from __future__ import annotations

import pytest
from test_passes_common import assert_same_outputs, entry_opcodes, hlo, run_pass
from test_passes_fusion import dense_relu, kernels, softmax, sum_xpyz

from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.passes.call_inliner import CallInliner
from minijax.compiler.passes.dce import DeadCodeElimination
from minijax.compiler.passes.layout_assignment import LayoutAssignment
from minijax.compiler.pipeline import (
    CompileOptions,
    FixedPoint,
    PassFailure,
    Pipeline,
    optimize,
)


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("text", [sum_xpyz(16), softmax(3, 7), dense_relu(2, 3, 4)],
                         ids=["sum", "softmax", "dense_relu"])
def test_optimize_every_level_keeps_values(level, text):
    module = optimize(parse_module(text), CompileOptions(opt_level=level))
    assert_same_outputs(parse_module(text), module, rtol=1e-4)
    assert module.buffer_assignment.argument_bytes > 0
    assert module.buffer_assignment.output_bytes > 0
    assert isinstance(module.fusion_log, list)
    assert (entry_opcodes(module)["fusion"] > 0) == (level == 2)
    assert "buffer-assignment" in module.pass_timings


def test_level_two_results_for_the_three_examples():
    summed = optimize(parse_module(sum_xpyz(64)))
    assert len(kernels(summed)) == 1 and summed.buffer_assignment.temp_bytes == 0
    soft = optimize(parse_module(softmax(8, 16)))
    assert len(kernels(soft)) <= 3
    dense = optimize(parse_module(dense_relu(4, 8, 16)))
    assert entry_opcodes(dense)["fusion"] == 1 and entry_opcodes(dense)["dot"] == 1


def test_no_fusion_when_disabled():
    module = optimize(parse_module(sum_xpyz(8)), CompileOptions(fuse=False))
    assert entry_opcodes(module)["fusion"] == 0 and module.fusion_log == []


def test_simplifications_run_at_level_one():
    text = hlo("""
  x = f32[4] parameter(0)
  c = f32[] constant(1)
  cb = f32[4] broadcast(c), dimensions={}
  m = f32[4] multiply(x, cb)
  n = f32[4] negate(m)
  nn = f32[4] negate(n)
  e1 = f32[4] exponential(nn)
  e2 = f32[4] exponential(x)
  a = f32[4] add(e1, e2)
  ROOT t = (f32[4]) tuple(a)""")
    module = optimize(parse_module(text), CompileOptions(opt_level=1))
    assert set(entry_opcodes(module)) == {"parameter", "exponential", "add", "tuple"}
    assert entry_opcodes(module)["exponential"] == 1


class _Countdown:
    """Changes the module (in name only) the first `n` times it runs."""

    name = "countdown"

    def __init__(self, n):
        self.n = n

    def run(self, module):
        self.n -= 1
        return self.n >= 0


def test_fixed_point_stops_when_nothing_changes():
    countdown = _Countdown(3)
    pipeline = Pipeline([FixedPoint([countdown, DeadCodeElimination()], max_iters=10)])
    pipeline.run(parse_module(sum_xpyz(4)))
    assert [name for name, _ in pipeline.history].count("countdown") == 4
    assert set(pipeline.timings) == {"countdown", "dce"}


def test_fixed_point_respects_max_iters():
    pipeline = Pipeline([FixedPoint([_Countdown(100)], max_iters=5)])
    pipeline.run(parse_module(sum_xpyz(4)))
    assert len(pipeline.history) == 5


class _Breaker:
    name = "breaker"

    def run(self, module):
        module.entry.root.operands = []  # a tuple with the wrong arity
        return True


def test_verifier_names_the_pass_that_broke_the_module():
    with pytest.raises(PassFailure, match="after pass breaker"):
        Pipeline([_Breaker()]).run(parse_module(sum_xpyz(4)))


def test_dump_hook_and_pass_filter(tmp_path):
    calls = []
    optimize(parse_module(sum_xpyz(4)), CompileOptions(dump_pass_re="fusion|dce"),
             dump_hook=lambda m, name, index: calls.append(name))
    assert "fusion" in calls and "dce" in calls and "cse" not in calls
    optimize(parse_module(sum_xpyz(4)), CompileOptions(dump_to=str(tmp_path),
                                                        dump_pass_re="^fusion$"))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 1 and files[0].endswith(".fusion.hlo.txt")
    assert "fusion(" in (tmp_path / files[0]).read_text()


def test_debug_level_three_prints_hlo_per_pass(capsys):
    from minijax.config import config
    old = config.read("minijax_debug")
    config.update("minijax_debug", 3)
    try:
        optimize(parse_module(sum_xpyz(4)), CompileOptions(opt_level=0))
    finally:
        config.update("minijax_debug", old)
    err = capsys.readouterr().err
    assert "HLO after pass" in err and "ENTRY" in err


def test_bad_opt_level_is_rejected():
    with pytest.raises(ValueError, match="opt_level"):
        CompileOptions(opt_level=7)


def test_call_inliner():
    text = """
HloModule calls
inner {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m = f32[4] multiply(a, b)
  ROOT e = f32[4] exponential(m)
}
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  c1 = f32[4] call(x, y), to_apply=inner
  c2 = f32[4] call(c1, x), to_apply=inner
  ROOT t = (f32[4]) tuple(c2)
}
"""
    module, changed = run_pass(CallInliner(), text)
    assert changed
    ops = entry_opcodes(module)
    assert ops["call"] == 0 and ops["exponential"] == 2
    assert [c.name for c in module.computations] == ["main"]


def test_layout_assignment_makes_everything_row_major():
    text = hlo("""
  x = f32[2,3]{0,1} parameter(0)
  n = f32[2,3]{0,1} negate(x)
  ROOT t = (f32[2,3]{0,1}) tuple(n)""")
    module, changed = run_pass(LayoutAssignment(), text)
    assert changed
    assert all(i.shape.layout is None for i in module.entry.instructions
               if not i.shape.is_tuple)
    assert not LayoutAssignment().run(module)


def test_every_default_pass_implements_the_pass_interface():
    from minijax.compiler.passes.base import Pass
    from minijax.compiler.pipeline import FixedPoint, default_passes
    for level in (0, 1, 2):
        items = default_passes(CompileOptions(opt_level=level))
        flat = [q for p in items for q in (p.passes if isinstance(p, FixedPoint) else [p])]
        assert flat and all(isinstance(p, Pass) and p.name for p in flat)
    with pytest.raises(NotImplementedError, match="does not implement run"):
        Pass().run(None)
