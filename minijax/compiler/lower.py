"""Lowering: jaxpr -> HLO module. The only place where the frontend meets the compiler
(with dispatch.py).

Each primitive's lowering rule is registered next to the primitive (see
compiler/lowering_registry.py); this module walks a jaxpr, calls the rules with a
LoweringRuleContext, and assembles the module:

- entry parameters: the jaxpr's inputs, then its non-scalar constants ("hoisted constants",
  passed at call time so large closed-over arrays never become HLO literals);
- scalar constants and literals become `constant` instructions;
- the root is a tuple of the outputs; every instruction carries op_name/source metadata.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.hlo.builder import HloBuilder, scalar_computation
from minijax.compiler.hlo.ir import Computation, Module, Shape, element_type_of
from minijax.compiler.lowering_registry import lowering_rules
from minijax.core import Literal


class LoweringError(Exception):
    """A primitive could not be lowered to HLO."""


def aval_to_shape(aval) -> Shape:
    return Shape.array(element_type_of(aval.dtype), aval.shape)


class ModuleContext:
    """State shared while lowering one module: computations created and naming."""

    def __init__(self, name: str):
        self.name = name
        self.computations: list[Computation] = []
        self._names: set[str] = set()

    def unique_name(self, base: str) -> str:
        name, i = base, 1
        while name in self._names:
            name = f"{base}.{i}"
            i += 1
        self._names.add(name)
        return name

    def register(self, comp: Computation) -> Computation:
        comp.name = self.unique_name(comp.name)
        self.computations.append(comp)
        return comp


class LoweringRuleContext:
    """What a lowering rule sees: the builder, the avals, the metadata and helpers."""

    def __init__(self, module_ctx: ModuleContext, builder: HloBuilder, avals_in, avals_out,
                 metadata: dict, fun_name: str):
        self.module_ctx = module_ctx
        self.builder = builder
        self.avals_in = avals_in
        self.avals_out = avals_out
        self.metadata = metadata
        self.fun_name = fun_name

    @staticmethod
    def element_type(dtype) -> str:
        return element_type_of(np.dtype(dtype))

    @staticmethod
    def shape_of(aval) -> Shape:
        return aval_to_shape(aval)

    def broadcast_scalars(self, operands):
        """Broadcast rank-0 operands to the (first) output shape (lax's scalar broadcasting)."""
        out_shape = self.avals_out[0].shape if isinstance(self.avals_out, list) else \
            self.avals_out.shape
        if not out_shape:
            return list(operands)
        return [self.builder.broadcast(op, out_shape, (), metadata=self.metadata)
                if op.shape.rank == 0 else op for op in operands]

    def scalar_computation(self, name: str, opcode: str, element_type) -> Computation:
        return self.module_ctx.register(scalar_computation(name, opcode, element_type))

    def new_computation(self, name: str) -> HloBuilder:
        """A builder for a fresh called computation (region) registered in the module."""
        comp = self.module_ctx.register(Computation(name))
        return HloBuilder(comp)

    def lower_jaxpr(self, closed_jaxpr, operands, builder: HloBuilder | None = None):
        """Inline a (closed) sub-jaxpr into `builder` (default: this rule's builder)."""
        jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
        consts = getattr(closed_jaxpr, "consts", [])
        b = builder or self.builder
        const_instrs = [_constant(b, c) for c in consts]
        return lower_jaxpr_body(self.module_ctx, b, jaxpr, const_instrs, list(operands),
                                self.fun_name)

    def lower_jaxpr_to_computation(self, closed_jaxpr, name: str) -> Computation:
        """A new computation whose parameters are the jaxpr's inputs and root its outputs
        (a tuple when there are several or `tuple_root`)."""
        b = self.new_computation(name)
        jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
        params = [b.parameter(i, aval_to_shape(v.aval)) for i, v in enumerate(jaxpr.invars)]
        outs = self.lower_jaxpr(closed_jaxpr, params, builder=b)
        b.set_root(b.tuple(outs) if len(outs) != 1 else outs[0])
        return b.computation


def _constant(b: HloBuilder, value):
    arr = np.asarray(value)
    return b.constant(arr, arr.dtype)


def _metadata(eqn, fun_name: str) -> dict:
    info = eqn.source_info
    md = {"op_name": f"jit({fun_name})/{eqn.primitive.name}"}
    if info is not None and info.line:
        md["source_file"] = info.file
        md["source_line"] = info.line
    return md


def lower_jaxpr_body(module_ctx, b: HloBuilder, jaxpr, const_instrs, arg_instrs, fun_name):
    """Lower the equations of `jaxpr` into builder `b`; returns the output instructions."""
    env = {}
    env.update(zip(jaxpr.constvars, const_instrs, strict=True))
    env.update(zip(jaxpr.invars, arg_instrs, strict=True))

    def read(v):
        if type(v) is Literal:
            return b.constant(np.asarray(v.val, dtype=v.aval.dtype), v.aval.dtype)
        return env[v]

    for eqn in jaxpr.eqns:
        rule = lowering_rules.get(eqn.primitive)
        if rule is None:
            raise LoweringError(
                f"minijax cannot compile '{eqn.primitive.name}' yet (no HLO lowering rule); "
                f"used at {eqn.source_info}. Run it outside jit, or use "
                "minijax.disable_jit() to run the function eagerly.")
        ctx = LoweringRuleContext(
            module_ctx, b, [v.aval for v in eqn.invars],
            [v.aval for v in eqn.outvars] if eqn.primitive.multiple_results
            else eqn.outvars[0].aval, _metadata(eqn, fun_name), fun_name)
        try:
            outs = rule(ctx, *[read(v) for v in eqn.invars], **eqn.params)
        except LoweringError:
            raise
        except Exception as e:
            raise LoweringError(f"lowering '{eqn.primitive.name}' (at {eqn.source_info}) "
                                f"failed: {type(e).__name__}: {e}") from e
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, instr in zip(eqn.outvars, outs, strict=True):
            want = aval_to_shape(v.aval)
            if instr.shape.dims != want.dims or instr.shape.element_type != want.element_type:
                raise LoweringError(
                    f"lowering of '{eqn.primitive.name}' produced {instr.shape.element_type}"
                    f"{list(instr.shape.dims)} but the jaxpr expects {want.element_type}"
                    f"{list(want.dims)} (at {eqn.source_info})")
            env[v] = instr
    return [read(v) for v in jaxpr.outvars]


def _is_inline_const(value) -> bool:
    return np.ndim(value) == 0


def lower_jaxpr_to_module(closed_jaxpr, name: str = "main", fun_name: str | None = None):
    """Lower a ClosedJaxpr to an HLO Module.

    Returns (module, hoisted_consts): the entry takes the jaxpr's inputs followed by
    `hoisted_consts` (the non-scalar constants, to pass at call time).
    """
    jaxpr = closed_jaxpr.jaxpr
    fun_name = fun_name or name
    module_ctx = ModuleContext(name)
    entry = Computation(module_ctx.unique_name(f"main.{_safe(name)}"))
    b = HloBuilder(entry)
    args = [b.parameter(i, aval_to_shape(v.aval), name=f"Arg_{i}")
            for i, v in enumerate(jaxpr.invars)]
    const_instrs, hoisted = [], []
    for var, value in zip(jaxpr.constvars, closed_jaxpr.consts, strict=True):
        if _is_inline_const(value):
            const_instrs.append(b.constant(np.asarray(value, dtype=var.aval.dtype),
                                           var.aval.dtype))
        else:
            _check_closed_over(value, var.aval, fun_name)
            index = len(args) + len(hoisted)
            const_instrs.append(b.parameter(index, aval_to_shape(var.aval),
                                            name=f"Const_{len(hoisted)}"))
            hoisted.append(value)
    outs = lower_jaxpr_body(module_ctx, b, jaxpr, const_instrs, args, fun_name)
    b.set_root(b.tuple(outs))
    module = Module(f"jit_{_safe(name)}", module_ctx.computations + [entry], entry)
    module.num_user_params = len(args)
    return module, hoisted


def _check_closed_over(value, aval, fun_name: str) -> None:
    """JAX's error for a closed-over Array spread over several processes (this process
    holds only its shards, and the program would need the whole value); a replicated
    one is readable in every process and is fine."""
    if getattr(value, "is_fully_addressable", True) or value.sharding.is_fully_replicated:
        return
    shape = ",".join(map(str, aval.shape))
    raise RuntimeError(
        "Closing over jax.Array that spans non-addressable (non process local) devices is "
        "not allowed. Please pass such arrays as arguments to the function. Got jax.Array: "
        f"{np.dtype(aval.dtype).name}[{shape}] (closed over by {fun_name}; its sharding "
        f"{value.sharding}). Hint: make it an argument of the jitted / shard_map-ped / "
        "pmapped function, or replicate it")


def _safe(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out or "fn"

