"""Hand-written HLO text in the styles real JAX/XLA print, for the parser/printer tests.

Written from XLA's documented syntax: the current style (no `%`, no signatures), the older
style (`%` names, signatures, operands with shapes), and post-optimization dumps (fusions,
tiled layouts, `/*index=N*/` comments, backend_config, sharding, frontend_attributes).
"""

SUM_XPYZ = """\
HloModule jit_f, entry_computation_layout={(f32[8]{0}, f32[8]{0}, f32[8]{0})->f32[]}, \
allow_spmd_sharding_propagation_to_parameters={true}, \
allow_spmd_sharding_propagation_to_output={true}

region_0.8 {
  Arg_0.9 = f32[] parameter(0)
  Arg_1.10 = f32[] parameter(1)
  ROOT add.11 = f32[] add(Arg_0.9, Arg_1.10), \
metadata={op_name="jit(f)/jit(main)/reduce_sum[axes=(0,)]" source_file="/tmp/f.py" source_line=4}
}

ENTRY main.13 {
  Arg_0.1 = f32[8]{0} parameter(0), metadata={op_name="x"}
  Arg_1.2 = f32[8]{0} parameter(1), metadata={op_name="y"}
  Arg_2.3 = f32[8]{0} parameter(2), metadata={op_name="z"}
  multiply.4 = f32[8]{0} multiply(Arg_1.2, Arg_2.3), \
metadata={op_name="jit(f)/jit(main)/mul" source_file="/tmp/f.py" source_line=4}
  add.5 = f32[8]{0} add(Arg_0.1, multiply.4), \
metadata={op_name="jit(f)/jit(main)/add" source_file="/tmp/f.py" source_line=4}
  constant.6 = f32[] constant(0)
  ROOT reduce.12 = f32[] reduce(add.5, constant.6), dimensions={0}, to_apply=region_0.8, \
metadata={op_name="jit(f)/jit(main)/reduce_sum[axes=(0,)]" source_file="/tmp/f.py" source_line=4}
}
"""

# Older style: %-names, computation signatures, operands written with their shapes.
SOFTMAX_OLD_STYLE = """\
HloModule jit_softmax.21

%region_0.5 (Arg_0.6: f32[], Arg_1.7: f32[]) -> f32[] {
  %Arg_0.6 = f32[] parameter(0)
  %Arg_1.7 = f32[] parameter(1)
  ROOT %maximum.8 = f32[] maximum(f32[] %Arg_0.6, f32[] %Arg_1.7)
}

%region_1.13 (Arg_0.14: f32[], Arg_1.15: f32[]) -> f32[] {
  %Arg_0.14 = f32[] parameter(0)
  %Arg_1.15 = f32[] parameter(1)
  ROOT %add.16 = f32[] add(f32[] %Arg_0.14, f32[] %Arg_1.15)
}

ENTRY %main.21 (Arg_0.1: f32[2,5]) -> f32[2,5] {
  %Arg_0.1 = f32[2,5]{1,0} parameter(0)
  %constant.4 = f32[] constant(-inf)
  %reduce.9 = f32[2]{0} reduce(f32[2,5]{1,0} %Arg_0.1, f32[] %constant.4), dimensions={1}, \
to_apply=%region_0.5, metadata={op_name="jit(softmax)/reduce_max[axes=(1,)]" \
source_file="/tmp/s.py" source_line=7}
  %broadcast.10 = f32[2,5]{1,0} broadcast(f32[2]{0} %reduce.9), dimensions={0}
  %subtract.11 = f32[2,5]{1,0} subtract(f32[2,5]{1,0} %Arg_0.1, f32[2,5]{1,0} %broadcast.10)
  %exponential.12 = f32[2,5]{1,0} exponential(f32[2,5]{1,0} %subtract.11)
  %constant.3 = f32[] constant(0)
  %reduce.17 = f32[2]{0} reduce(f32[2,5]{1,0} %exponential.12, f32[] %constant.3), \
dimensions={1}, to_apply=%region_1.13
  %broadcast.18 = f32[2,5]{1,0} broadcast(f32[2]{0} %reduce.17), dimensions={0}
  ROOT %divide.19 = f32[2,5]{1,0} divide(f32[2,5]{1,0} %exponential.12, \
f32[2,5]{1,0} %broadcast.18)
}
"""

WHILE_LOOP = """\
HloModule jit_loop, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

region_0.4 {
  arg_tuple.5 = (s32[], f32[4]{0}) parameter(0)
  get-tuple-element.6 = s32[] get-tuple-element(arg_tuple.5), index=0
  constant.8 = s32[] constant(1)
  add.9 = s32[] add(get-tuple-element.6, constant.8)
  get-tuple-element.7 = f32[4]{0} get-tuple-element(arg_tuple.5), index=1
  sine.10 = f32[4]{0} sine(get-tuple-element.7)
  ROOT tuple.11 = (s32[], f32[4]{0}) tuple(add.9, sine.10)
}

region_1.12 {
  arg_tuple.13 = (s32[], f32[4]{0}) parameter(0)
  get-tuple-element.14 = s32[] get-tuple-element(arg_tuple.13), index=0
  constant.16 = s32[] constant(10)
  ROOT compare.17 = pred[] compare(get-tuple-element.14, constant.16), direction=LT
}

ENTRY main.20 {
  Arg_0.1 = f32[4]{0} parameter(0)
  constant.2 = s32[] constant(0)
  tuple.3 = (s32[], f32[4]{0}) tuple(constant.2, Arg_0.1)
  while.18 = (s32[], f32[4]{0}) while(tuple.3), condition=region_1.12, body=region_0.4
  ROOT get-tuple-element.19 = f32[4]{0} get-tuple-element(while.18), index=1
}
"""

CONDITIONAL = """\
HloModule jit_switch, entry_computation_layout={(s32[], f32[3]{0})->f32[3]{0}}

branch_0.5 {
  Arg_0.6 = f32[3]{0} parameter(0)
  ROOT negate.7 = f32[3]{0} negate(Arg_0.6)
}

branch_1.8 {
  Arg_0.9 = f32[3]{0} parameter(0)
  ROOT exponential.10 = f32[3]{0} exponential(Arg_0.9)
}

branch_2.11 {
  Arg_0.12 = f32[3]{0} parameter(0)
  ROOT copy.13 = f32[3]{0} copy(Arg_0.12)
}

true_comp {
  t = f32[3]{0} parameter(0)
  ROOT tt = f32[3]{0} tanh(t)
}

false_comp {
  f = f32[3]{0} parameter(0)
  ROOT ff = f32[3]{0} cosine(f)
}

ENTRY main.16 {
  Arg_0.1 = s32[] parameter(0)
  Arg_1.2 = f32[3]{0} parameter(1)
  constant.3 = s32[] constant(0)
  constant.4 = s32[] constant(2)
  clamp.14 = s32[] clamp(constant.3, Arg_0.1, constant.4)
  conditional.15 = f32[3]{0} conditional(clamp.14, Arg_1.2, Arg_1.2, Arg_1.2), \
branch_computations={branch_0.5, branch_1.8, branch_2.11}
  p = pred[] compare(Arg_0.1, constant.3), direction=EQ, type=SIGNED
  ROOT c2 = f32[3]{0} conditional(p, conditional.15, conditional.15), \
true_computation=true_comp, false_computation=false_comp
}
"""

BATCHED_DOT = """\
HloModule jit_bmm, entry_computation_layout={(f32[2,3,4]{2,1,0}, \
f32[2,4,5]{2,1,0})->f32[2,3,5]{2,1,0}}

ENTRY main.4 {
  Arg_0.1 = f32[2,3,4]{2,1,0} parameter(0)
  Arg_1.2 = f32[2,4,5]{2,1,0} parameter(1)
  ROOT dot.3 = f32[2,3,5]{2,1,0} dot(Arg_0.1, Arg_1.2), lhs_batch_dims={0}, \
lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, \
operand_precision={default,default}, \
metadata={op_name="jit(bmm)/dot_general" source_file="/tmp/b.py" source_line=2}
}
"""

CONVOLUTION = """\
HloModule jit_conv, entry_computation_layout={(f32[1,8,8,4]{3,2,1,0}, \
f32[3,3,2,6]{3,2,1,0})->f32[1,4,4,6]{3,2,1,0}}

ENTRY main.4 {
  Arg_0.1 = f32[1,8,8,4]{3,2,1,0} parameter(0)
  Arg_1.2 = f32[3,3,2,6]{3,2,1,0} parameter(1)
  ROOT convolution.3 = f32[1,4,4,6]{3,2,1,0} convolution(Arg_0.1, Arg_1.2), \
window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2
}
"""

GATHER_SCATTER = """\
HloModule jit_index, entry_computation_layout={(f32[5,3]{1,0}, s32[4,1]{1,0}, \
f32[4,3]{1,0})->(f32[4,3]{1,0}, f32[5,3]{1,0})}

region_0.10 {
  Arg_0.11 = f32[] parameter(0)
  Arg_1.12 = f32[] parameter(1)
  ROOT add.13 = f32[] add(Arg_0.11, Arg_1.12)
}

ENTRY main.15 {
  Arg_0.1 = f32[5,3]{1,0} parameter(0)
  Arg_1.2 = s32[4,1]{1,0} parameter(1)
  Arg_2.3 = f32[4,3]{1,0} parameter(2)
  gather.4 = f32[4,3]{1,0} gather(Arg_0.1, Arg_1.2), offset_dims={1}, \
collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, \
indices_are_sorted=true
  scatter.14 = f32[5,3]{1,0} scatter(Arg_0.1, Arg_1.2, Arg_2.3), update_window_dims={1}, \
inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, \
unique_indices=true, to_apply=region_0.10
  ROOT tuple.15 = (f32[4,3]{1,0}, f32[5,3]{1,0}) tuple(gather.4, scatter.14)
}
"""

# Post-optimization dump: fusions, tiled layouts, comments, backend_config, sharding, ...
OPTIMIZED_DUMP = """\
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0:T(8,128)}, \
f32[8,128]{1,0})->(f32[8]{0}, f32[8,128]{1,0})}, allow_spmd_sharding_propagation_to_output={true}

%fused_computation (param_0.1: f32[8,128], param_1.2: f32[8,128]) -> f32[8,128] {
  %param_0.1 = f32[8,128]{1,0:T(8,128)} parameter(0)
  %param_1.2 = f32[8,128]{1,0} parameter(1)
  ROOT %multiply.0 = f32[8,128]{1,0} multiply(f32[8,128]{1,0:T(8,128)} %param_0.1, \
f32[8,128]{1,0} %param_1.2)
}

%region_0.3 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.9 = f32[] add(f32[] %a, f32[] %b)
}

%fused_reduce (p0: f32[8,128]) -> f32[8] {
  %p0 = f32[8,128]{1,0} parameter(0)
  %c0 = f32[] constant(0)
  ROOT %r = f32[8]{0} reduce(f32[8,128]{1,0} %p0, f32[] %c0), dimensions={1}, \
to_apply=%region_0.3
}

ENTRY %main.10 (Arg_0.1: f32[8,128], Arg_1.2: f32[8,128]) -> (f32[8], f32[8,128]) {
  %Arg_0.1 = f32[8,128]{1,0:T(8,128)} parameter(0), sharding={replicated}
  %Arg_1.2 = f32[8,128]{1,0} parameter(1), frontend_attributes={_xla_buffer_placement="arg"}
  %fusion = f32[8,128]{1,0} fusion(f32[8,128]{1,0:T(8,128)} %Arg_0.1, \
f32[8,128]{1,0} %Arg_1.2), kind=kLoop, calls=%fused_computation, \
metadata={op_name="jit(f)/mul" source_file="f.py" source_line=3 deduplicated_name="fusion"}
  %fusion.1 = f32[8]{0} fusion(f32[8,128]{1,0} %fusion), kind=kInput, calls=%fused_reduce, \
backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"outer":{"a":[1,2]}}
  ROOT %tuple = (f32[8]{0}, /*index=1*/f32[8,128]{1,0}) tuple(f32[8]{0} %fusion.1, \
/*index=1*/f32[8,128]{1,0} %fusion)
}
"""

MISC_OPS = """\
HloModule misc, entry_computation_layout={(f32[4,6]{1,0}, s32[])->f32[2,3]{0,1}}

max_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}

ge_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = pred[] compare(x, y), direction=GE
}

add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

lt_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(x, y), direction=LT, type=TOTALORDER
}

ENTRY main {
  p0 = f32[4,6]{1,0} parameter(0)
  i = s32[] parameter(1)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  rw = f32[2,3]{1,0} reduce-window(p0, ninf), window={size=2x2 stride=2x2}, to_apply=max_f32
  sas = f32[4,6]{1,0} select-and-scatter(p0, rw, zero), window={size=2x2 stride=2x2}, \
select=ge_f32, scatter=add_f32
  sl = f32[2,3]{1,0} slice(sas), slice={[0:4:2], [1:4]}
  pd = f32[5,8]{1,0} pad(sl, zero), padding=1_2_0x0_1_2
  ds = f32[2,2]{1,0} dynamic-slice(pd, i, i), dynamic_slice_sizes={2,2}
  dus = f32[5,8]{1,0} dynamic-update-slice(pd, ds, i, i)
  rv = f32[5,8]{1,0} reverse(dus), dimensions={0,1}
  io = s32[5,8]{1,0} iota(), iota_dimension=1
  srt = (f32[5,8]{1,0}, s32[5,8]{1,0}) sort(rv, io), dimensions={1}, is_stable=true, \
to_apply=lt_f32
  cat = f32[8,6]{1,0} concatenate(p0, p0), dimensions={0}
  rp = f32[8,6]{1,0} reduce-precision(cat), exponent_bits=5, mantissa_bits=10
  bc = s32[8,6]{1,0} bitcast-convert(rp)
  cc = f32[8,6]{1,0} custom-call(rp), custom_call_target="my_target", \
api_version=API_VERSION_ORIGINAL
  big = f32[3,2,2]{2,1,0} constant({ { { 1, 2 }, { 3, 4 } }, { { 5e-07, 6.25 }, { inf, -0 } }, \
{ { 1e+30, -nan }, { 0.1, 3.4028235e+38 } } })
  ROOT out = f32[2,3]{0,1} copy(rw)
}
"""

ALL_SAMPLES = {
    "sum_xpyz": SUM_XPYZ, "softmax_old_style": SOFTMAX_OLD_STYLE, "while_loop": WHILE_LOOP,
    "conditional": CONDITIONAL, "batched_dot": BATCHED_DOT, "convolution": CONVOLUTION,
    "gather_scatter": GATHER_SCATTER, "optimized_dump": OPTIMIZED_DUMP, "misc_ops": MISC_OPS,
}
