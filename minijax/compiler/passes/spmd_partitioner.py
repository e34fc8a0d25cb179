"""SPMD partitioner: a module over global shapes with sharding annotations -> the module
each device runs, over its blocks, with the collectives the sharding needs.

Input: the entry's parameters carry `sharding=` (XLA text, compiler/hlo/sharding.py);
`custom-call(x), custom_call_target="Sharding"` (lax.with_sharding_constraint) pins an
intermediate; `out_specs` optionally pins the outputs. The mesh is given by axis names and
sizes; partition p is the p-th device of the mesh, row-major.

Propagation and partitioning happen in one walk over the entry in program order. Each
instruction gets a dims spec (per dimension, the mesh axes splitting it; a list of them
for a tuple):
- elementwise ops take the most-split operand's spec and reshard the other operands to it;
- broadcast maps the operand's split dims to its output dims; transpose permutes them;
- reduce reduces locally; reduced dims that were split are summed across devices by an
  `all-reduce` with the reduce's own computation over those axes;
- concatenate keeps its operands' splits of the other dimensions;
- tuple / get-tuple-element carry their elements' specs;
- while: the carry keeps the splits it comes in with; a whole carry element takes the
  split the body gives it, the body is walked again until nothing changes (each element
  changes at most once); body and condition are partitioned over the carry's specs by
  the same rules (the body's results resharded to them), so a loop over split data runs
  on blocks; its condition ends in a scalar, the same on every device;
- conditional: each branch is partitioned over its operand's specs; the result takes
  the split most branches give (preferring an operand's), the other branches reshard;
- reshape, slice, dynamic-slice, dynamic-update-slice, pad, reverse, sort, variadic
  reduce (argmax), convolution, dot, gather and scatter: compiler/spmd_rules.py
  (dimension-number rules, mixed in);
- every other instruction runs replicated: its operands are gathered whole first.
Resharding moves a split from one dimension to another that is whole with one
`all-to-all` (each device sends the others only the blocks they will own), gathers
dimensions whose split otherwise changes (`all-gather` over their axes) and slices
dimensions that become split (`dynamic-slice` at this device's block offset, read from a
table by `partition-id`); a broadcast resharded to a split is built from its operand's
block (never materialized whole and sliced).
"""

from __future__ import annotations

import math

import numpy as np

from minijax.compiler.hlo import opcodes
from minijax.compiler.hlo.builder import HloBuilder
from minijax.compiler.hlo.ir import Computation, Instruction, Module, Shape
from minijax.compiler.hlo.sharding import spec_to_text, text_to_spec
from minijax.compiler.passes.base import Pass
from minijax.compiler.spmd_rules import SpmdOpRules

_ELEMENTWISE = (opcodes.select(family="elementwise") - {"bitcast-convert"})
_WHOLE_DIMS_KEPT = {"slice", "dynamic-slice", "dynamic-update-slice", "pad", "reverse"}


class SpmdPartitionError(ValueError):
    """A sharding annotation does not fit the mesh or the array."""


class SpmdPartitioner(Pass, SpmdOpRules):
    """Partition a module for a mesh (`axis_names`, `axis_sizes`). After `run`,
    `result_specs` holds each output's dims spec."""

    name = "spmd-partitioner"

    def __init__(self, axis_names, axis_sizes, out_specs=None):
        self.names = tuple(axis_names)
        self.sizes = dict(zip(self.names, axis_sizes))
        self.size = math.prod(axis_sizes)
        self.ids = np.arange(self.size).reshape(tuple(axis_sizes))
        self.out_specs = out_specs
        self.result_specs: list = []

    # ------------------------------------------------------------------ mesh helpers
    def _groups(self, axes) -> str:
        over = [self.names.index(a) for a in axes]
        rest = [k for k in range(len(self.names)) if k not in over]
        rows = self.ids.transpose(rest + over).reshape(-1, math.prod(
            self.sizes[a] for a in axes))
        return "{" + ",".join("{" + ",".join(str(int(v)) for v in r) + "}" for r in rows) + "}"

    def _block_index(self, axes) -> np.ndarray:
        """Per partition: its block number along a dimension split over `axes`."""
        coords = np.indices(self.ids.shape).reshape(len(self.names), -1)
        out = np.zeros(self.size, np.int64)
        for a in axes:
            out = out * self.sizes[a] + coords[self.names.index(a)]
        return out

    def _parts(self, axes) -> int:
        return math.prod(self.sizes[a] for a in axes)

    def _local(self, shape: Shape, spec) -> Shape:
        if shape.is_tuple:
            return Shape.tuple([self._local(t, e) for t, e in zip(shape.tuple_shapes, spec,
                                                                   strict=True)])
        dims = []
        for d, (n, axes) in enumerate(zip(shape.dims, spec, strict=True)):
            k = self._parts(axes)
            if n % k:
                raise SpmdPartitionError(f"dimension {d} of {shape} (size {n}) is not divisible "
                                         f"by the {k} devices of mesh axes {axes}")
            dims.append(n // k)
        return Shape(shape.element_type, tuple(dims))

    def _global(self, shape: Shape, spec) -> Shape:
        return Shape(shape.element_type, tuple(n * self._parts(a)
                                                for n, a in zip(shape.dims, spec)))

    # ------------------------------------------------------------------ resharding
    def _all_gather(self, b, x, dim, axes):
        dims = list(x.shape.dims)
        dims[dim] *= self._parts(axes)
        return b.add_instruction(
            "all-gather", [x], {"channel_id": "1", "replica_groups": self._groups(axes),
                                "dimensions": (dim,), "use_global_device_ids": "true"},
            shape=Shape(x.shape.element_type, tuple(dims)))

    def _all_reduce(self, b, x, axes, computation):
        return b.add_instruction(
            "all-reduce", [x], {"channel_id": "1", "replica_groups": self._groups(axes),
                                "use_global_device_ids": "true"},
            {"to_apply": computation}, shape=x.shape)

    def _pid(self, b):
        comp = b.computation
        got = self._pids.get(id(comp))
        if got is None or got[0] is not comp:   # one partition-id per computation
            got = self._pids[id(comp)] = (comp, b.add_instruction("partition-id", [],
                                                                  shape=Shape("u32", ())))
        return got[1]

    def _slice_own(self, b, x, dim_axes: dict):
        """Keep this device's block of each dimension in `dim_axes` (dim -> axes)."""
        starts = []
        sizes = list(x.shape.dims)
        for d in range(x.shape.rank):
            axes = dim_axes.get(d)
            if not axes:
                starts.append(b.constant(np.int32(0)))
                continue
            sizes[d] //= self._parts(axes)
            table = (self._block_index(axes) * sizes[d]).astype(np.int32)
            t = b.constant(table)
            off = b.dynamic_slice(t, [self._pid_s32(b)], (1,))
            starts.append(b.reshape(off, ()))
        return b.dynamic_slice(x, starts, tuple(sizes))

    def _pid_s32(self, b):
        return b.convert(self._pid(b), "s32")

    def _all_to_all(self, b, x, src, dst, axes):
        """x split over `axes` along dim `src` (whole along `dst`) -> whole along `src`,
        split over `axes` along `dst`: one all-to-all, each device sending every other
        device of its group the block it will own (1/k of x each), instead of gathering
        all of x and slicing."""
        k = self._parts(axes)
        dims = list(x.shape.dims)
        # [.., src/k, .., dst, ..] -> [.., src/k, .., k, dst/k, ..] with k moved in front of
        # src: all-to-all over that dim sends chunk j to group member j (block j of dst).
        split = dims[:dst] + [k, dims[dst] // k] + dims[dst + 1:]
        y = b.reshape(x, tuple(split))
        kpos = dst  # position of the k dim in `split`
        s_pos = src if src < dst else src + 1  # position of src in `split`
        perm = [d for d in range(len(split)) if d != kpos]
        perm.insert(perm.index(s_pos), kpos)
        y = b.transpose(y, tuple(perm))
        y = b.add_instruction(
            "all-to-all", [y], {"channel_id": "1", "replica_groups": self._groups(axes),
                                "dimensions": (perm.index(kpos),),
                                "use_global_device_ids": "true"}, shape=y.shape)
        # After it, the k dim holds the block of src that member j had: merge (k, src/k).
        out = list(dims)
        out[src] *= k
        out[dst] //= k
        return b.reshape(y, tuple(out))

    def _reshard(self, b, x, cur, want):
        if cur == want:
            return x
        if x.shape.is_tuple:
            parts = x.operands if x.opcode == "tuple" else [
                b.get_tuple_element(x, k) for k in range(len(cur))]
            return b.tuple([self._reshard(b, e, c, w)
                            for e, c, w in zip(parts, cur, want, strict=True)])
        if x.opcode == "broadcast" and all(
                not cur[d] for d in range(len(cur)) if d not in x.attrs["dimensions"]):
            # Broadcast the operand's block instead of slicing a whole broadcast result.
            dims = x.attrs["dimensions"]
            op = self._reshard(b, x.operands[0], tuple(cur[d] for d in dims),
                               tuple(want[d] for d in dims))
            return b.broadcast(op, self._local(self._global(x.shape, cur), want).dims, dims)
        cur = list(cur)
        for d, c in enumerate(cur):
            # A split that moves to a dimension that is whole: all-to-all.
            if not c or c == want[d]:
                continue
            to = next((e for e, w in enumerate(want) if w == c and not cur[e]), None)
            if to is not None:
                x = self._all_to_all(b, x, d, to, c)
                cur[d], cur[to] = (), c
        for d, (c, w) in enumerate(zip(cur, want, strict=True)):
            if c and c != w:
                x = self._all_gather(b, x, d, c)
        slices = {d: w for d, (c, w) in enumerate(zip(cur, want)) if w and c != w}
        return self._slice_own(b, x, slices) if slices else x

    # ------------------------------------------------------------------ the walk
    def run(self, module: Module) -> bool:
        self._module = module
        self._pids: dict = {}
        self._adds: dict = {}
        self._dry = 0
        old = module.entry
        if old.root.opcode != "tuple":
            raise SpmdPartitionError("the entry's root must be a tuple of the outputs")
        walk = _Walk(self, old, None)
        want = list(walk.root_spec())
        for k in range(len(want)):
            if self.out_specs is not None and self.out_specs[k] is not None:
                want[k] = self.out_specs[k]
        comp = walk.finish(want)
        module.computations[module.computations.index(old)] = comp
        module.entry = comp
        for add in self._adds.values():
            module.add_computation(add)
        # Callees first (loop bodies call the all-reduce computations added last); the
        # computations the partitioned ones replace are dropped.
        module.computations = module.reachable_computations()
        self.result_specs = want
        return True

    def _partition(self, b, instr: Instruction, get, replicated, spec):
        op = instr.opcode
        ops = instr.operands
        if op == "parameter":
            rank = instr.shape.rank
            raw = instr.attrs.get("sharding")
            s = ((),) * rank if raw is None else text_to_spec(raw, self.names,
                                                             list(self.sizes.values()), rank)
            if s is None:
                raise SpmdPartitionError(f"{instr.name}: sharding {raw} is not a tiling of the "
                                         f"mesh {self.names}")
            p = b.parameter(instr.parameter_number, self._local(instr.shape, s),
                            name=instr.name)
            p.attrs["sharding"] = raw or "{replicated}"
            return p, s
        if op == "custom-call" and instr.attrs.get("custom_call_target") == "Sharding":
            s = text_to_spec(instr.attrs.get("sharding", "{replicated}"), self.names,
                             list(self.sizes.values()), instr.shape.rank)
            if s is None:
                raise SpmdPartitionError(f"{instr.name}: unsupported sharding "
                                         f"{instr.attrs.get('sharding')}")
            self._local(instr.shape, s)
            return get(ops[0], s), s
        if op in _ELEMENTWISE and not instr.shape.is_tuple and ops:
            rank = instr.shape.rank
            cands = [spec[id(o)] for o in ops if o.shape.rank == rank and spec[id(o)]]
            s = max(cands, key=lambda c: sum(len(a) for a in c)) if cands else ((),) * rank
            new_ops = [get(o, s) if o.shape.rank == rank else replicated(o) for o in ops]
            return self._clone(b, instr, new_ops, self._local(instr.shape, s)), s
        if op == "tuple":
            return b.tuple([get(o) for o in ops]), [spec[id(o)] for o in ops]
        if op == "get-tuple-element":
            k = instr.attrs["index"]
            return b.get_tuple_element(get(ops[0]), k), spec[id(ops[0])][k]
        if op == "while":
            return self._while(b, instr, get, spec)
        if op == "conditional":
            return self._conditional(b, instr, get, replicated, spec)
        if op == "broadcast":
            src = spec[id(ops[0])]
            out = [()] * instr.shape.rank
            for i, d in enumerate(instr.attrs["dimensions"]):
                out[d] = src[i]
            s = tuple(out)
            return self._clone(b, instr, [get(ops[0])], self._local(instr.shape, s)), s
        if op == "transpose":
            src = spec[id(ops[0])]
            s = tuple(src[p] for p in instr.attrs["dimensions"])
            return self._clone(b, instr, [get(ops[0])], self._local(instr.shape, s)), s
        if op == "reshape":
            return self._reshape(b, instr, get, spec)
        if op in _WHOLE_DIMS_KEPT:
            return self._whole_dims_kept(b, instr, get, replicated, spec)
        if op == "reduce" and len(ops) == 2 and not instr.shape.is_tuple:
            src = spec[id(ops[0])]
            dims = instr.attrs["dimensions"]
            kept = tuple(src[d] for d in range(len(src)) if d not in dims)
            axes = tuple(a for d in dims for a in src[d])
            local = self._clone(b, instr, [get(ops[0]), replicated(ops[1])],
                                self._local(instr.shape, kept))
            if axes:
                local = self._all_reduce(b, local, axes, instr.called["to_apply"])
            return local, kept
        if op in ("sort", "reduce"):   # several operands (argmax) or sort: per row
            return self._along_whole_dims(b, instr, get, replicated, spec)
        if op == "dot":
            return self._dot(b, instr, get, spec)
        if op == "convolution":
            return self._convolution(b, instr, get, spec)
        if op == "concatenate" and not instr.shape.is_tuple:
            (cat,) = instr.attrs["dimensions"]
            cands = [spec[id(o)] for o in ops if spec[id(o)] and any(spec[id(o)])]
            if cands:
                s = max(cands, key=lambda c: sum(len(a) for a in c))
                s = tuple(() if d == cat else a for d, a in enumerate(s))
                return self._clone(b, instr, [get(o, s) for o in ops],
                                   self._local(instr.shape, s)), s
        if op == "gather":
            done = self._gather(b, instr, get, spec)
            if done is not None:
                return done
        if op == "scatter" and len(ops) == 3:
            done = self._scatter(b, instr, get, spec)
            if done is not None:
                return done
        if op == "constant":
            c = b.add_instruction("constant", [], dict(instr.attrs), shape=instr.shape,
                                  literal=instr.literal, name=instr.name)
            return c, _replicated(instr.shape)
        # Anything else runs replicated on whole operands.
        new_ops = [replicated(o) for o in ops]
        out = self._clone(b, instr, new_ops, instr.shape)
        return out, _replicated(instr.shape)

    # ------------------------------------------------------------------ control flow
    def _walk_dry(self, comp, param_specs):
        """The root spec `comp` gets with its parameters split as `param_specs` (its
        partitioned form is thrown away)."""
        self._dry += 1
        try:
            return _Walk(self, comp, param_specs).root_spec()
        finally:
            self._dry -= 1

    def _partitioned(self, comp, param_specs, root_want):
        """`comp` partitioned with its parameters split as `param_specs` and its root
        resharded to `root_want` (None: as propagated), added to the module."""
        new = _Walk(self, comp, param_specs).finish(root_want)
        if not self._dry:
            taken = {c.name for c in self._module.computations}
            k = 1
            while new.name in taken:
                new.name = f"{comp.name}.spmd{k}"
                k += 1
            self._module.add_computation(new)
        return new

    def _while(self, b, instr, get, spec):
        """The carry keeps the splits it comes in with; an element that comes in whole
        takes the split the body gives it (then the body runs again over the new carry,
        up to a fixed point: each element changes at most once). The body's results are
        resharded to the carry's splits; the condition, partitioned alike, ends in a
        scalar, which is the same on every device (reductions of split data all-reduce)."""
        carry = spec[id(instr.operands[0])]
        body, cond = instr.called["body"], instr.called["condition"]
        for _ in range(len(instr.shape.flat()) + 1):
            merged = _promote(carry, self._walk_dry(body, [carry]))
            if merged == carry:
                break
            carry = merged
        new_body = self._partitioned(body, [carry], carry)
        new_cond = self._partitioned(cond, [carry], None)
        out = b.add_instruction("while", [get(instr.operands[0], carry)], dict(instr.attrs),
                                {"condition": new_cond, "body": new_body},
                                shape=self._local(instr.shape, carry), metadata=instr.metadata,
                                name=instr.name)
        return out, carry

    def _conditional(self, b, instr, get, replicated, spec):
        """Each branch partitioned over its operand's splits; the result takes the split
        most branches give it, preferring one an operand has (a branch with a whole result
        slices its block, one split otherwise reshards). The branch index (a scalar) is
        the same on every device."""
        index, *args = instr.operands
        key = "branch_computations" if "branch_computations" in instr.called else None
        branches = list(instr.called[key]) if key else [instr.called["true_computation"],
                                                         instr.called["false_computation"]]
        outs = [self._walk_dry(c, [spec[id(a)]]) for c, a in zip(branches, args, strict=True)]
        s = _join(outs, [x for a in args for x in _leaves(spec[id(a)])])
        new = [self._partitioned(c, [spec[id(a)]], s)
               for c, a in zip(branches, args, strict=True)]
        called = {key: new} if key else {"true_computation": new[0],
                                         "false_computation": new[1]}
        out = b.add_instruction("conditional", [replicated(index)] + [get(a) for a in args],
                                dict(instr.attrs), called, shape=self._local(instr.shape, s),
                                metadata=instr.metadata, name=instr.name)
        return out, s

    def _clone(self, b, instr, operands, shape, **attrs):
        return b.add_instruction(instr.opcode, operands, {**instr.attrs, **attrs},
                                 dict(instr.called),
                                 shape=shape, literal=instr.literal, metadata=instr.metadata,
                                 name=instr.name)

    def _add_computation(self, b, element_type):
        comp = self._adds.get(element_type)
        if comp is None:
            comp = self._adds[element_type] = Computation(f"spmd_add_{element_type}")
            cb = HloBuilder(comp)
            x = cb.parameter(0, Shape(element_type, ()))
            y = cb.parameter(1, Shape(element_type, ()))
            cb.set_root(cb.add(x, y))
        return comp


class _Walk:
    """One computation being partitioned: its new builder and, per old instruction, the
    new instruction and its spec (a dims spec; a list of them for a tuple). The root
    tuple is left to `finish`, which reshards each output as asked."""

    def __init__(self, partitioner, old: Computation, param_specs):
        self.p, self.old = partitioner, old
        self.b = HloBuilder(Computation(old.name))
        self.new: dict = {}
        self.spec: dict = {}
        for instr in old.instructions:
            if instr is old.root and instr.opcode == "tuple":
                continue
            if instr.opcode == "parameter" and param_specs is not None:
                s = param_specs[instr.parameter_number]
                out = self.b.parameter(instr.parameter_number,
                                       partitioner._local(instr.shape, s), name=instr.name)
            else:
                out, s = partitioner._partition(self.b, instr, self.get, self.replicated,
                                                self.spec)
            self.new[id(instr)], self.spec[id(instr)] = out, s

    def get(self, op, want=None):
        if want is None:
            return self.new[id(op)]
        return self.p._reshard(self.b, self.new[id(op)], self.spec[id(op)], want)

    def replicated(self, op):
        return self.get(op, _replicated(op.shape))

    def root_spec(self):
        root = self.old.root
        if root.opcode == "tuple":
            return [self.spec[id(o)] for o in root.operands]
        return self.spec[id(root)]

    def finish(self, want) -> Computation:
        """The partitioned computation, its root resharded to `want` (None: as is)."""
        root = self.old.root
        if root.opcode == "tuple":
            want = want or self.root_spec()
            out = self.b.tuple([self.get(o, w) for o, w in zip(root.operands, want,
                                                                 strict=True)])
        else:
            out = self.get(root, want)
        self.b.set_root(out)
        return self.b.computation


def _replicated(shape: Shape):
    """The spec of a value whole on every device."""
    if shape.is_tuple:
        return [_replicated(s) for s in shape.tuple_shapes]
    return ((),) * shape.rank


def _promote(carry, out):
    """A loop carry element that is whole takes the split the body gives it; a split one
    keeps its split."""
    if isinstance(carry, list):
        return [_promote(c, o) for c, o in zip(carry, out, strict=True)]
    return out if not any(carry) and any(out) else carry


def _join(specs, known):
    """The spec of a value that is one of `specs` (conditional branches): the split most
    of the split ones have (among equals, one of the operands' splits in `known`, else
    the first branch's), as XLA picks one; the others are resharded to it."""
    if isinstance(specs[0], list):
        return [_join(list(leaves), known) for leaves in zip(*specs, strict=True)]
    split = [s for s in specs if any(s)]
    return max(split, key=lambda s: (split.count(s), s in known)) if split else specs[0]


def _leaves(spec) -> list:
    return [x for s in spec for x in _leaves(s)] if isinstance(spec, list) else [spec]


def partition_module(module: Module, axis_names, axis_sizes, out_specs=None):
    """Partition `module` in place for the mesh; returns each output's dims spec."""
    p = SpmdPartitioner(axis_names, axis_sizes, out_specs)
    p.run(module)
    return p.result_specs


__all__ = ["SpmdPartitionError", "SpmdPartitioner", "partition_module", "spec_to_text"]
