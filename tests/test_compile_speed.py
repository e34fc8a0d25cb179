"""Compile time: the work the compiler does grows linearly where it used to be quadratic.

These tests count work (index rebuilds, whole-computation rewrites, shape checks, pass
runs) rather than time, so they do not flake on a busy machine; one generous smoke bound
checks that a 200-op chain compiles. Every speed-up must leave the optimized program
unchanged: results are compared with NumPy, peak memory with its brute-force definition,
and the incremental verifier with the full one.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from test_passes_common import hlo

import minijax as jax
import minijax.numpy as jnp
from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo import ir
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.verifier import HloVerificationError, verify_module
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.compiler.passes.buffer_assignment import assign_buffers
from minijax.compiler.passes.cse import CommonSubexpressionElimination
from minijax.compiler.passes.fusion import Fusion
from minijax.compiler.passes.graph_index import UserIndex
from minijax.compiler.passes.incremental_verifier import IncrementalVerifier
from minijax.compiler.persistent_cache import module_fingerprint
from minijax.compiler.pipeline import CompileOptions, FixedPoint, Pipeline, optimize

_UNARY = ["exponential", "negate", "sine", "abs", "cosine", "tanh"]


def chain_text(n: int, width: int = 16) -> str:
    """n elementwise ops in a chain, each also reading a shared scalar broadcast."""
    lines = [f"x0 = f32[{width}] parameter(0)", "c = f32[] constant(0.5)",
             f"cb = f32[{width}] broadcast(c), dimensions={{}}"]
    for k in range(n):
        if k % 2:
            lines.append(f"x{k + 1} = f32[{width}] {_UNARY[k % len(_UNARY)]}(x{k})")
        else:
            lines.append(f"x{k + 1} = f32[{width}] multiply(x{k}, cb)")
    lines.append(f"ROOT t = (f32[{width}]) tuple(x{n})")
    return hlo("\n".join(lines))


def chain_fn(n):
    ops = [jnp.sin, jnp.cos, jnp.tanh, lambda v: v * 1.5, lambda v: v + 0.25, jnp.abs]

    def f(x):
        for i in range(n):
            x = ops[i % len(ops)](x)
        return x
    return f


def chain_ref(n, x):
    ops = [np.sin, np.cos, np.tanh, lambda v: v * np.float32(1.5),
           lambda v: v + np.float32(0.25), np.abs]
    for i in range(n):
        x = ops[i % len(ops)](x).astype(np.float32)
    return x


class _Counting:
    """Counts calls of Computation.replace_all_uses and topological_sort (whole-computation
    rewrites)."""

    def __init__(self, monkeypatch):
        self.calls = {"replace_all_uses": 0, "topological_sort": 0}
        for name in self.calls:
            original = getattr(ir.Computation, name)

            def wrapper(comp, *args, _name=name, _original=original):
                self.calls[_name] += 1
                return _original(comp, *args)
            monkeypatch.setattr(ir.Computation, name, wrapper)


# --------------------------------------------------------------------------- fusion


@pytest.mark.parametrize("n", [50, 100, 200])
def test_fusion_user_queries_are_linear(n, monkeypatch):
    module = parse_module(chain_text(n))
    args = [np.linspace(-1, 1, 16, dtype=np.float32)]
    want = evaluate_module(parse_module(chain_text(n)), args)
    counting = _Counting(monkeypatch)
    fusion = Fusion()
    assert fusion.run(module)
    index = fusion.indexes[0]
    entry_size = n + 4
    # One build of the index, no rebuilds in producer-consumer fusion.
    assert index.rebuild_work <= entry_size
    assert index.queries <= 3 * n
    # No rewrite of the whole entry or a whole fused body per fused producer.
    assert counting.calls["replace_all_uses"] <= 2
    assert counting.calls["topological_sort"] <= 2
    verify_module(module)
    assert [i.opcode for i in module.entry.instructions].count("fusion") == 1
    np.testing.assert_allclose(evaluate_module(module, args)[0], want[0], rtol=1e-6)


def test_user_index_tracks_edits():
    module = parse_module(hlo("""
  x = f32[4] parameter(0)
  a = f32[4] exponential(x)
  b = f32[4] negate(a)
  c = f32[4] add(a, b)
  ROOT t = (f32[4]) tuple(c)"""))
    comp = module.entry
    x, a, b, c, t = comp.instructions
    index = UserIndex(comp)
    assert index.users_of(a) == [b, c] and index.users_of(x) == [a]
    d = ir.Instruction("negate", a.shape, [x], name="d")
    index.replace(b, d)
    comp.instructions[comp.instructions.index(b)] = d
    assert c.operands == [a, d] and index.users_of(d) == [c] and index.users_of(x) == [a, d]
    assert index.users_of(a) == [c] and b not in index
    before = list(c.operands)
    c.operands = [x, d]
    index.operands_changed(c, before)
    assert index.users_of(a) == [] and index.users_of(x) == [a, d, c]
    comp.instructions.remove(a)
    index.remove(a)
    assert a not in index and index.users_of(x) == [d, c]  # program order
    index.rebuild()
    assert index.users_of(x) == [d, c] and index.users_of(d) == [c]


# --------------------------------------------------------------------------- CSE, folding


def test_cse_merges_in_one_walk(monkeypatch):
    n = 200
    lines = ["x = f32[8] parameter(0)"]
    for k in range(n):  # n copies of the same constant broadcast and the same exp
        lines += [f"c{k} = f32[] constant(2)", f"b{k} = f32[8] broadcast(c{k}), dimensions={{}}",
                  f"m{k} = f32[8] multiply(x, b{k})"]
    lines.append("ROOT t = (" + ", ".join(["f32[8]"] * n) + ") tuple("
                 + ", ".join(f"m{k}" for k in range(n)) + ")")
    module = parse_module(hlo("\n".join(lines)))
    counting = _Counting(monkeypatch)
    assert CommonSubexpressionElimination().run(module)
    assert counting.calls["replace_all_uses"] == 0
    opcodes = [i.opcode for i in module.entry.instructions]
    assert opcodes.count("constant") == 1 and opcodes.count("multiply") == 1
    assert len(set(map(id, module.entry.root.operands))) == 1
    verify_module(module)


def test_constant_folding_rewrites_uses_in_one_walk(monkeypatch):
    lines = ["x = f32[4] parameter(0)", "k0 = f32[4] constant({1, 2, 3, 4})"]
    for k in range(100):
        lines.append(f"k{k + 1} = f32[4] add(k{k}, k{k})")
    lines.append("y = f32[4] multiply(x, k100)")
    lines.append("ROOT t = (f32[4]) tuple(y)")
    module = parse_module(hlo("\n".join(lines)))
    counting = _Counting(monkeypatch)
    optimize(module, CompileOptions(opt_level=1))
    assert counting.calls["replace_all_uses"] == 0
    x = np.arange(4, dtype=np.float32)
    got = evaluate_module(module, [x])[0]
    np.testing.assert_array_equal(got, x * (np.arange(1, 5, dtype=np.float32) * 2.0 ** 100))


# --------------------------------------------------------------------------- pipeline


class _ChangesOnce:
    name = "changes-once"

    def __init__(self):
        self.runs = 0

    def run(self, module):
        self.runs += 1
        return self.runs == 1


class _NeverChanges:
    name = "never-changes"

    def __init__(self):
        self.runs = 0

    def run(self, module):
        self.runs += 1
        return False


def test_fixed_point_does_not_rerun_passes_that_found_nothing():
    first, second, third = _NeverChanges(), _ChangesOnce(), _NeverChanges()
    pipeline = Pipeline([FixedPoint([first, second, third])], verify=False)
    pipeline.run(parse_module(chain_text(2)))
    # first: round 1, and again after `second` changed the module; third: once, after the
    # change; second: twice (the change, then the run that finds nothing).
    assert (first.runs, second.runs, third.runs) == (2, 2, 1)
    assert [name for name, _ in pipeline.history] == [
        "never-changes", "changes-once", "never-changes", "never-changes", "changes-once"]


def test_pipeline_module_does_not_import_passes():
    code = ("import sys, minijax, minijax.compiler.pipeline as p; "
            "o = p.CompileOptions(opt_level=2); "
            "print(sorted(m for m in sys.modules if m.startswith('minijax.compiler.passes.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert out.stdout.strip() == "[]"
    from minijax.compiler import pipeline
    assert pipeline.Fusion is Fusion
    with pytest.raises(AttributeError, match="no attribute 'NotAPass'"):
        pipeline.NotAPass  # noqa: B018


def test_incremental_verifier_skips_unchanged_and_catches_changes():
    closed = jax.make_jaxpr(lambda x: jnp.sum(jnp.exp(x) * 2.0, axis=1))(
        np.ones((4, 8), np.float32))
    module, _ = lower_jaxpr_to_module(closed, "f")
    verifier = IncrementalVerifier()
    verifier(module)
    first = verifier.checked
    assert first == sum(len(c.instructions) for c in module.computations)
    verifier(module)
    assert verifier.checked == first and verifier.skipped == first
    # An in-place change of a verified instruction's attributes is checked again.
    reduce = next(i for i in module.entry.instructions if i.opcode == "reduce")
    reduce.attrs["dimensions"] = (0, 1, 2)
    with pytest.raises(HloVerificationError, match="reduce"):
        verifier(module)
    reduce.attrs["dimensions"] = (1,)
    # So is an instruction whose operand changed shape.
    exp = next(i for i in module.entry.instructions if i.opcode == "exponential")
    exp.shape = exp.shape.with_dims((4, 9))
    with pytest.raises(HloVerificationError):
        verifier(module)


def test_pipeline_verifies_fewer_instructions_than_full_verification():
    closed = jax.make_jaxpr(lambda x: jnp.tanh(x @ x.T) / jnp.sum(jnp.exp(x)))(
        np.ones((8, 8), np.float32))
    module, _ = lower_jaxpr_to_module(closed, "f")
    pipeline = Pipeline(__import__("minijax.compiler.pipeline", fromlist=["x"])
                        .default_passes(CompileOptions()))
    pipeline.run(module)
    assert pipeline.verify.skipped > 0
    verify_module(module)


# --------------------------------------------------------------------------- buffers


@pytest.mark.parametrize("n", [1, 7, 40])
def test_peak_bytes_matches_its_definition(n):
    closed = jax.make_jaxpr(lambda x, y: [jnp.sum(jnp.sin(x * k) @ y) for k in range(n)])(
        np.ones((3, 5), np.float32), np.ones((5, 2), np.float32))
    for level in (0, 2):
        module, _ = lower_jaxpr_to_module(closed, "f")
        optimize(module, CompileOptions(opt_level=level))
        ba = assign_buffers(module)
        brute = max((ba.live_bytes_at(t) for t in range(len(ba.sequence))), default=0)
        assert ba.peak_bytes == brute


# --------------------------------------------------------------------------- fingerprint


def _lowered(f, *args):
    return lower_jaxpr_to_module(jax.make_jaxpr(f)(*args), "f")[0]


def test_fingerprint_ignores_names_and_metadata_but_not_the_program():
    x = np.ones((4,), np.float32)
    a = _lowered(lambda v: jnp.sin(v) * 2.0, x)
    _lowered(lambda v: jnp.cos(v) + v, x)  # advances the instruction name counter
    b = _lowered(lambda v: jnp.sin(v) * 2.0, x)
    assert module_to_text(a) != module_to_text(b)  # different names
    fp = module_fingerprint(a, "cpu", (2,))
    assert module_fingerprint(b, "cpu", (2,)) == fp
    for instr in b.entry.instructions:
        instr.metadata = {"op_name": "elsewhere", "source_line": 99}
    assert module_fingerprint(b, "cpu", (2,)) == fp
    assert module_fingerprint(a, "interpreter", (2,)) != fp
    assert module_fingerprint(a, "cpu", (1,)) != fp
    assert module_fingerprint(_lowered(lambda v: jnp.sin(v) * 3.0, x), "cpu", (2,)) != fp
    assert module_fingerprint(_lowered(lambda v: jnp.sin(v) * 2.0, np.ones(5, np.float32)),
                              "cpu", (2,)) != fp
    assert module_fingerprint(_lowered(lambda v: jnp.cos(v) * 2.0, x), "cpu", (2,)) != fp



def test_programs_differing_in_hoisted_constants_share_code_not_values():
    # Non-scalar closed-over arrays are entry parameters (passed at call time), so both
    # functions map to one fingerprint and one executable, each with its own values.
    x = np.ones((4,), np.float32)
    big1, big2 = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32) * 10
    a = _lowered(lambda v: v + big1, x)
    b = _lowered(lambda v: v + big2, x)
    assert module_fingerprint(a, "cpu", (2,)) == module_fingerprint(b, "cpu", (2,))
    f1 = jax.jit(lambda v: v + big1, backend="interpreter")
    f2 = jax.jit(lambda v: v + big2, backend="interpreter")
    np.testing.assert_array_equal(np.asarray(f1(x)), x + big1)
    np.testing.assert_array_equal(np.asarray(f2(x)), x + big2)


# --------------------------------------------------------------------------- end to end


def test_200_op_chain_compiles_and_matches_numpy():
    n = 200
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    f = jax.jit(chain_fn(n), backend="interpreter")
    t0 = time.perf_counter()
    out = f(x)
    elapsed = time.perf_counter() - t0
    np.testing.assert_allclose(np.asarray(out), chain_ref(n, x), rtol=2e-5, atol=2e-6)
    assert elapsed < 30  # smoke bound only (the optimizer takes well under a second)
    module = f.lower(x).compile()._entry.module
    assert [i.opcode for i in module.entry.instructions].count("fusion") == 1


def test_jit_lowered_text_is_printed_before_optimization():
    f = jax.jit(lambda v: jnp.exp(v) * 2.0 + 1.0)
    lowered = f.lower(np.ones(4, np.float32))
    compiled = lowered.compile()
    assert "fusion" not in lowered.as_text() and "exponential" in lowered.as_text()
    assert "fusion" in compiled.as_text()
