"""Fusion: the three examples from the issue, the decision rules, and multi-output fusion."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_passes_common import dims_text, entry_opcodes, hlo, run_pass

import minijax.numpy
from minijax.compiler.passes.buffer_assignment import assign_buffers
from minijax.compiler.passes.fusion import Fusion
from minijax.compiler.passes.fusion_builder import fusion_outputs

NOT_KERNELS = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def kernels(module):
    return [i for i in module.entry.instructions if i.opcode not in NOT_KERNELS]


def fusions(module):
    return [i for i in module.entry.instructions if i.opcode == "fusion"]


def body_opcodes(fusion):
    return {i.opcode for i in fusion.called["calls"].instructions}


def sum_xpyz(n: int) -> str:
    return hlo(f"""
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[{n}] parameter(2)
  m = f32[{n}] multiply(y, z)
  a = f32[{n}] add(x, m)
  c = f32[] constant(0)
  r = f32[] reduce(a, c), dimensions={{0}}, to_apply=add_f32
  ROOT t = (f32[]) tuple(r)""")


def softmax(rows: int, cols: int) -> str:
    s = f"{rows},{cols}"
    return hlo(f"""
  x = f32[{s}] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max_f32
  mb = f32[{s}] broadcast(mx), dimensions={{0}}
  sh = f32[{s}] subtract(x, mb)
  e = f32[{s}] exponential(sh)
  zero = f32[] constant(0)
  sm = f32[{rows}] reduce(e, zero), dimensions={{1}}, to_apply=add_f32
  sb = f32[{s}] broadcast(sm), dimensions={{0}}
  d = f32[{s}] divide(e, sb)
  ROOT t = (f32[{s}]) tuple(d)""")


def dense_relu(batch: int, k: int, n: int) -> str:
    return hlo(f"""
  x = f32[{batch},{k}] parameter(0)
  w = f32[{k},{n}] parameter(1)
  b = f32[{n}] parameter(2)
  d = f32[{batch},{n}] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = f32[{batch},{n}] broadcast(b), dimensions={{1}}
  a = f32[{batch},{n}] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[{batch},{n}] broadcast(zero), dimensions={{}}
  relu = f32[{batch},{n}] maximum(a, zb)
  ROOT t = (f32[{batch},{n}]) tuple(relu)""")


def test_sum_of_x_plus_y_times_z_is_one_input_fusion_without_temps():
    module, changed = run_pass(Fusion(), sum_xpyz(64))
    assert changed
    (kernel,) = kernels(module)
    assert kernel.opcode == "fusion" and kernel.attrs["kind"] == "kInput"
    assert kernel.called["calls"].root.opcode == "reduce"
    assert {"add", "multiply"} <= body_opcodes(kernel)
    ba = assign_buffers(module)
    assert ba.temp_bytes == 0
    assert ba.output_bytes == 4 and ba.argument_bytes == 3 * 64 * 4
    assert "fuse m into r: elementwise producer" in module.fusion_log


def test_softmax_fuses_into_at_most_three_kernels():
    module, _ = run_pass(Fusion(), softmax(4, 8))
    ks = kernels(module)
    assert len(ks) <= 3 and all(k.opcode == "fusion" for k in ks)
    log = "\n".join(module.fusion_log)
    assert "reject e -> (sm, d): expensive op with 2 users" in log
    assert "as an extra output" in log
    multi = [f for f in fusions(module) if f.shape.is_tuple]
    assert len(multi) == 1
    assert {o.opcode for o in fusion_outputs(multi[0])} == {"reduce", "exponential"}


def test_dot_bias_relu_epilogue_is_one_loop_fusion():
    module, _ = run_pass(Fusion(), dense_relu(4, 6, 5))
    ops = entry_opcodes(module)
    assert ops["dot"] == 1 and ops["fusion"] == 1
    (epilogue,) = fusions(module)
    assert epilogue.attrs["kind"] == "kLoop"
    assert {"add", "maximum", "broadcast"} <= body_opcodes(epilogue)
    assert any(op.opcode == "dot" for op in epilogue.operands)
    assert any(line.startswith("reject d -> (") and "never fused" in line
               for line in module.fusion_log)


def test_expensive_producer_is_not_duplicated_but_cheap_one_is():
    entry = """
  x = f32[8] parameter(0)
  e = f32[8] exponential(x)
  n = f32[8] negate(x)
  one = f32[] constant(1)
  ob = f32[8] broadcast(one), dimensions={}
  a = f32[8] add(e, n)
  m = f32[8] multiply(e, n)
  s = f32[8] subtract(a, ob)
  c = f32[] constant(0)
  r = f32[] reduce(m, c), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[8], f32[]) tuple(s, r)"""
    module, _ = run_pass(Fusion(multi_output=False), hlo(entry))
    exps = [f for f in fusions(module) if "exponential" in body_opcodes(f)]
    assert entry_opcodes(module)["exponential"] + len(exps) == 1
    assert sum("negate" in body_opcodes(f) for f in fusions(module)) == 2
    assert any("reject e -> " in line and "expensive op with 2 users" in line
               for line in module.fusion_log)
    assert any("fuse n into" in line and "duplicated" in line for line in module.fusion_log)


def test_sibling_reductions_share_one_kernel():
    entry = """
  x = f32[6,10] parameter(0)
  zero = f32[] constant(0)
  s = f32[6] reduce(x, zero), dimensions={1}, to_apply=add_f32
  sq = f32[6,10] multiply(x, x)
  s2 = f32[6] reduce(sq, zero), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[6], f32[6]) tuple(s, s2)"""
    module, _ = run_pass(Fusion(), hlo(entry))
    (kernel,) = kernels(module)
    assert kernel.shape.is_tuple and kernel.attrs["kind"] == "kInput"
    assert any(line.startswith("merge sibling fusions") for line in module.fusion_log)


def test_siblings_with_different_loop_shapes_stay_apart():
    entry = """
  x = f32[6,10] parameter(0)
  zero = f32[] constant(0)
  s = f32[6] reduce(x, zero), dimensions={1}, to_apply=add_f32
  s2 = f32[10] reduce(x, zero), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[6], f32[10]) tuple(s, s2)"""
    module, _ = run_pass(Fusion(), hlo(entry))
    assert len(kernels(module)) == 2


def test_unfusible_ops_stay_out():
    entry = """
  x = f32[4,4] parameter(0)
  n = f32[4,4] negate(x)
  d = f32[4,4] dot(n, n), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[4,4] add(d, x)
  k = s32[4] iota(), iota_dimension=0
  srt = f32[4,4] sort(a), dimensions={1}, to_apply=lt_f32
  e = f32[4,4] exponential(srt)
  ROOT t = (f32[4,4], s32[4]) tuple(e, k)"""
    text = hlo(entry).replace("ENTRY main", """lt_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY main""")
    module, _ = run_pass(Fusion(), text)
    ops = entry_opcodes(module)
    assert ops["dot"] == 1 and ops["sort"] == 1
    log = "\n".join(module.fusion_log)
    assert "sort is never fused" in log and "dot is never fused" in log


def test_fusing_into_while_body():
    text = """
HloModule loop
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  lim = s32[] constant(3)
  ROOT lt = pred[] compare(i, lim), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  h = f32[] constant(0.5)
  hb = f32[4] broadcast(h), dimensions={}
  v1 = f32[4] multiply(v, hb)
  v2 = f32[4] add(v1, v)
  ROOT r = (s32[], f32[4]) tuple(i1, v2)
}
ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  out = f32[4] get-tuple-element(w), index=1
  ROOT t = (f32[4]) tuple(out)
}
"""
    module, changed = run_pass(Fusion(), text)
    assert changed
    body = next(c for c in module.computations if c.name == "body")
    assert any(i.opcode == "fusion" for i in body.instructions)


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 9))
def test_softmax_differential_any_shape(rows, cols):
    module, _ = run_pass(Fusion(), softmax(rows, cols))
    assert len(kernels(module)) <= 3


@settings(max_examples=10, deadline=None)
@given(dims=st.lists(st.integers(1, 4), min_size=2, max_size=3).map(tuple))
def test_elementwise_chain_with_transpose_and_slices_is_one_loop_fusion(dims):
    d = dims_text(dims)
    rev = dims_text(reversed(dims))
    perm = dims_text(reversed(range(len(dims))))
    first = dims[0]
    entry = f"""
  x = f32[{d}] parameter(0)
  y = f32[{rev}] parameter(1)
  yt = f32[{d}] transpose(y), dimensions={{{perm}}}
  a = f32[{d}] add(x, yt)
  t = f32[{d}] tanh(a)
  c = f32[{first * 2},{dims_text(dims[1:])}] concatenate(t, x), dimensions={{0}}
  ROOT out = (f32[{first * 2},{dims_text(dims[1:])}]) tuple(c)"""
    module, _ = run_pass(Fusion(), hlo(entry))
    (kernel,) = kernels(module)
    assert kernel.attrs["kind"] == "kLoop"


def mlp_train_step() -> str:
    """One SGD step of a dense+relu layer with mean squared error, as JAX lowers it."""
    return hlo("""
  x = f32[16,8] parameter(0)
  w = f32[8,4] parameter(1)
  b = f32[4] parameter(2)
  y = f32[16,4] parameter(3)
  d = f32[16,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[16,4] broadcast(b), dimensions={1}
  z = f32[16,4] add(d, bb)
  zero = f32[] constant(0)
  zeros = f32[16,4] broadcast(zero), dimensions={}
  h = f32[16,4] maximum(z, zeros)
  diff = f32[16,4] subtract(h, y)
  sq = f32[16,4] multiply(diff, diff)
  total = f32[] reduce(sq, zero), dimensions={0,1}, to_apply=add_f32
  n = f32[] constant(64)
  loss = f32[] divide(total, n)
  scale = f32[] constant(0.03125)
  scales = f32[16,4] broadcast(scale), dimensions={}
  gh = f32[16,4] multiply(diff, scales)
  pos = pred[16,4] compare(z, zeros), direction=GT
  gz = f32[16,4] select(pos, gh, zeros)
  gw = f32[8,4] dot(x, gz), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  gb = f32[4] reduce(gz, zero), dimensions={0}, to_apply=add_f32
  lr = f32[] constant(0.1)
  lrw = f32[8,4] broadcast(lr), dimensions={}
  lrb = f32[4] broadcast(lr), dimensions={}
  sw = f32[8,4] multiply(gw, lrw)
  nw = f32[8,4] subtract(w, sw)
  sb = f32[4] multiply(gb, lrb)
  nb = f32[4] subtract(b, sb)
  ROOT t = (f32[8,4], f32[4], f32[]) tuple(nw, nb, loss)""")


def test_mlp_training_step_fuses_its_epilogues():
    module, _ = run_pass(Fusion(), mlp_train_step(), rtol=1e-4)
    ops = entry_opcodes(module)
    assert ops["dot"] == 2
    assert ops["maximum"] == ops["select"] == ops["subtract"] == 0  # all inside fusions
    assert len(kernels(module)) <= 7


def relu_backward(batch: int, n: int, k: int, dot_reads_sum: bool = False) -> str:
    """The gradient through a dense ReLU layer: dy is masked by h > 0, summed over the batch
    (the bias gradient) and multiplied by the weights (the input gradient). With
    `dot_reads_sum`, the masked gradient also meets a dot of itself inside the sum."""
    s = f"{batch},{n}"
    zero = "zero = f32[] constant(0)"
    if dot_reads_sum:
        tail = f"""
  back = f32[{batch},{k}] dot(g, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}
  cut = f32[{s}] slice(back), slice={{[0:{batch}], [0:{n}]}}
  mixed = f32[{s}] multiply(g, cut)
  {zero}
  db = f32[{n}] reduce(mixed, zero), dimensions={{0}}, to_apply=add_f32"""
    else:
        tail = f"""
  {zero}
  db = f32[{n}] reduce(g, zero), dimensions={{0}}, to_apply=add_f32
  back = f32[{batch},{k}] dot(g, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{1}}"""
    return hlo(f"""
  dy = f32[{s}] parameter(0)
  h = f32[{s}] parameter(1)
  w = f32[{k},{n}] parameter(2)
  z = f32[] constant(0)
  pos = pred[{s}] compare(h, f32[{s}] broadcast(z), dimensions={{}}), direction=GT
  mask = f32[{s}] convert(pos)
  g = f32[{s}] multiply(dy, mask){tail}
  ROOT t = (f32[{n}], f32[{batch},{k}]) tuple(db, back)""")


def test_value_kept_for_a_dot_is_an_extra_output_of_its_reduction():
    """The masked gradient is computed once, in the bias-gradient reduction, which also
    writes it for the dot: no kernel of its own, no copy computed twice."""
    module, _ = run_pass(Fusion(), relu_backward(8, 6, 5))
    assert "multiply" not in entry_opcodes(module)
    (multi,) = [f for f in fusions(module) if f.shape.is_tuple]
    assert multi.attrs["kind"] == "kInput"
    assert {o.opcode for o in fusion_outputs(multi)} == {"reduce", "multiply"}
    assert {"compare", "convert"} <= body_opcodes(multi)   # the mask is computed inside
    (dot,) = [i for i in module.entry.instructions if i.opcode == "dot"]
    assert dot.operands[0].opcode == "get-tuple-element" and dot.operands[0].operands[0] is multi
    assert len(kernels(module)) == 2   # that fusion and the dot
    log = "\n".join(module.fusion_log)
    assert "reads it from memory anyway" in log and "as an extra output" in log


def test_value_kept_for_a_dot_that_the_reduction_also_reads_stays_correct():
    """Here the dot of the masked gradient feeds the reduction too: the gradient cannot be
    an output of that reduction (a cycle), so it stays a kernel of its own."""
    module, _ = run_pass(Fusion(), relu_backward(8, 6, 7, dot_reads_sum=True))
    for f in fusions(module):
        assert not any(op is f for op in f.operands)
    log = "\n".join(module.fusion_log)
    assert "another path leads from it to the reduction" in log


@settings(max_examples=8, deadline=None)
@given(batch=st.integers(1, 9), n=st.integers(1, 9), k=st.integers(1, 6))
def test_relu_backward_fusion_matches_evaluator_any_shape(batch, n, k):
    run_pass(Fusion(), relu_backward(batch, n, k))


@settings(max_examples=6, deadline=None)
@given(n=st.sampled_from([1, 7, 33]), op=st.sampled_from(["exponential", "logistic", "cosine"]))
def test_two_extra_outputs_of_one_reduction_when_growing_pulls_in_the_second(n, op):
    """Found by tests/test_differential_jit.py (a program returning its activations and their
    loss): o is an output of the program and a operand of the reduction, so phase 2 made o
    an extra output of the reduction; growing that fusion then pulled in a (o's producer,
    also read by the reduction), and the pass went on to try a, by then fused, as a second
    extra output: a KeyError from the graph index. Now a producer fused meanwhile is
    skipped, and the result stays the evaluator's."""
    module, _ = run_pass(Fusion(), hlo(f"""
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  a = f32[{n}] {op}(x)
  c = f32[{n}] cosine(a)
  o = f32[{n}] add(c, y)
  m = f32[{n}] multiply(o, a)
  zero = f32[] constant(0)
  r = f32[] reduce(m, zero), dimensions={{0}}, to_apply=add_f32
  ROOT t = (f32[{n}], f32[]) tuple(o, r)"""))
    (multi,) = fusions(module)
    assert {o.opcode for o in fusion_outputs(multi)} == {"reduce", "add"}


def test_program_returning_activations_and_their_loss_jit_matches_numpy():
    """The same shape end to end (it failed to compile): jit against float64 NumPy."""
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    y = np.linspace(1, -1, 9, dtype=np.float32)

    def f(m, x, y):
        a1 = (1 / (1 + m.exp(-x)) * 3 - 1.5) * y + x
        a2 = m.cos(a1) - 0.5 + 0.25 * y
        return a2, m.sum(a2 * a1, axis=-1)

    got = minijax.jit(lambda x, y: f(minijax.numpy, x, y))(x, y)
    want = f(np, x.astype(np.float64), y.astype(np.float64))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)
