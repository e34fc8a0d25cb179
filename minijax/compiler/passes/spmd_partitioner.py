"""SPMD partitioner: a module over global shapes with sharding annotations -> the module
each device runs, over its blocks, with the collectives the sharding needs.

Input: the entry's parameters carry `sharding=` (XLA text, compiler/hlo/sharding.py);
`custom-call(x), custom_call_target="Sharding"` (lax.with_sharding_constraint) pins an
intermediate; `out_specs` optionally pins the outputs. The mesh is given by axis names and
sizes; partition p is the p-th device of the mesh, row-major.

Propagation and partitioning happen in one walk over the entry in program order. Each
instruction gets a dims spec (per dimension, the mesh axes splitting it):
- elementwise ops take the most-split operand's spec and reshard the other operands to it;
- broadcast maps the operand's split dims to its output dims; transpose permutes them;
  reshape keeps split leading dims that it leaves alone;
- reduce reduces locally; reduced dims that were split are summed across devices by an
  `all-reduce` with the reduce's own computation over those axes;
- dot keeps the lhs's batch and contracting split, reshards the rhs to match, keeps both
  operands' free-dim splits (an axis used twice is gathered on the rhs), and adds an
  `all-reduce` over the contracting axes: data-parallel (batch rows split), model-parallel
  (weight columns split) and contracting-dim-split products all need no resharding of
  their operands;
- concatenate keeps its operands' splits of the other dimensions;
- gather keeps the operand's splits of dimensions it slices whole (and never indexes) and
  the indices' splits of their batch dimensions; scatter keeps the operand's (and the
  updates' window) splits of dimensions it updates whole; both keep a split of an operand
  dimension indexed by an iota over an indices dimension split alike (take_along_axis's
  row index), with a local iota;
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
from minijax.compiler.hlo.shape_inference import parse_dim_labels
from minijax.compiler.hlo.sharding import spec_to_text, text_to_spec
from minijax.compiler.passes.base import Pass

_ELEMENTWISE = (opcodes.select(family="elementwise") - {"bitcast-convert"})
_WHOLE_DIMS_KEPT = {"slice", "dynamic-slice", "dynamic-update-slice", "pad", "reverse"}


class SpmdPartitionError(ValueError):
    """A sharding annotation does not fit the mesh or the array."""


class SpmdPartitioner(Pass):
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
        live = set(module.reachable_computations())
        module.computations = [c for c in module.computations if c in live]
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

    def _reshape(self, b, instr, get, spec):
        """A split dimension stays split where the reshape keeps it whole, makes it the
        major part of a merged dimension, or splits it with a major part the devices
        divide; other splits are gathered first."""
        x = instr.operands[0]
        xs = spec[id(x)]
        keep, out = list(xs), [()] * instr.shape.rank
        for d, axes in enumerate(xs):
            if not axes:
                continue
            e = _reshape_target(x.shape.dims, instr.shape.dims, d, self._parts(axes), xs)
            if e is None or out[e]:
                keep[d] = ()
            else:
                out[e] = axes
        s = tuple(out)
        return self._clone(b, instr, [get(x, tuple(keep))], self._local(instr.shape, s)), s

    def _whole_dims_kept(self, b, instr, get, replicated, spec):
        """slice, dynamic-slice, pad and reverse keep the split of each dimension they
        leave whole (a dynamic start there is clamped to 0, on blocks too);
        dynamic-update-slice keeps the operand's (else the update's) split of each
        dimension the update covers whole."""
        op, ops, at = instr.opcode, instr.operands, instr.attrs
        x = ops[0]
        dims = x.shape.dims
        if op == "dynamic-slice":
            whole = [n == m for n, m in zip(at["dynamic_slice_sizes"], dims)]
        elif op == "slice":
            whole = [tuple(t) == (0, m, 1) for t, m in zip(at["slice"], dims)]
        elif op == "pad":
            whole = [tuple(t) == (0, 0, 0) for t in at["padding"]]
        elif op == "reverse":
            whole = [d not in at["dimensions"] for d in range(len(dims))]
        else:
            whole = [n == m for n, m in zip(ops[1].shape.dims, dims)]
        s = tuple(a if w else () for a, w in zip(spec[id(x)], whole, strict=True))
        if op == "dynamic-update-slice":
            used = {a for axes in s for a in axes}
            s = tuple(a or (u if w and not set(u) & used else ())
                      for a, u, w in zip(s, spec[id(ops[1])], whole))
            new_ops = [get(x, s), get(ops[1], s)] + [replicated(o) for o in ops[2:]]
        else:
            new_ops = [get(x, s)] + [replicated(o) for o in ops[1:]]
        local = self._local(instr.shape, s)
        attrs = {}
        if op == "dynamic-slice":
            attrs["dynamic_slice_sizes"] = local.dims
        elif op == "slice":
            attrs["slice"] = tuple((lo, hi // self._parts(a), st)
                                   for (lo, hi, st), a in zip(at["slice"], s))
        return self._clone(b, instr, new_ops, local, **attrs), s

    def _convolution(self, b, instr, get, spec):
        """A split batch stays split (each device convolves its images); a kernel's split
        output features stay split; input features split on both operands alike (the
        kernel's gradient over a split batch) give partial sums, all-reduced. Spatial
        dimensions and grouped convolutions' features are gathered first."""
        lhs, rhs = instr.operands
        ll, rl, ol = parse_dim_labels(instr.attrs["dim_labels"])
        plain = (instr.attrs.get("feature_group_count") or 1) == 1
        ungrouped = plain and (instr.attrs.get("batch_group_count") or 1) == 1
        ls, rs = spec[id(lhs)], spec[id(rhs)]
        lb, lf, ro, ri = ll.index("b"), ll.index("f"), rl.index("o"), rl.index("i")
        want_l, want_r = [()] * lhs.shape.rank, [()] * rhs.shape.rank
        if (instr.attrs.get("batch_group_count") or 1) == 1:
            want_l[lb] = ls[lb]
        if ungrouped and not set(ls[lf]) & set(want_l[lb]):
            want_l[lf] = want_r[ri] = ls[lf]
        if ungrouped and not set(rs[ro]) & {a for axes in want_l for a in axes}:
            want_r[ro] = rs[ro]
        out = [()] * instr.shape.rank
        out[ol.index("b")], out[ol.index("f")] = want_l[lb], want_r[ro]
        s = tuple(out)
        local = self._clone(b, instr, [get(lhs, tuple(want_l)), get(rhs, tuple(want_r))],
                            self._local(instr.shape, s))
        if want_l[lf]:
            add = self._add_computation(b, instr.shape.element_type)
            local = self._all_reduce(b, local, want_l[lf], add)
        return local, s

    def _dot(self, b, instr, get, spec):
        lhs, rhs = instr.operands
        at = instr.attrs
        lb, rb = list(at.get("lhs_batch_dims", ())), list(at.get("rhs_batch_dims", ()))
        lc, rc = list(at.get("lhs_contracting_dims", ())), list(at.get("rhs_contracting_dims",
                                                                        ()))
        ls, rs = spec[id(lhs)], spec[id(rhs)]
        lf = [d for d in range(lhs.shape.rank) if d not in lb + lc]
        rf = [d for d in range(rhs.shape.rank) if d not in rb + rc]
        used = {a for d in range(len(ls)) for a in ls[d]}
        want_r = [()] * rhs.shape.rank
        for i, d in enumerate(rb):
            want_r[d] = ls[lb[i]]
        for i, d in enumerate(rc):
            want_r[d] = ls[lc[i]]
        for d in rf:
            want_r[d] = rs[d] if not set(rs[d]) & used else ()
        want_r = tuple(want_r)
        out_spec = tuple([ls[d] for d in lb] + [ls[d] for d in lf] + [want_r[d] for d in rf])
        local = self._clone(b, instr, [get(lhs), get(rhs, want_r)],
                            self._local(instr.shape, out_spec))
        axes = tuple(a for d in lc for a in ls[d])
        if axes:
            add = self._add_computation(b, instr.shape.element_type)
            local = self._all_reduce(b, local, axes, add)
        return local, out_spec

    def _gather(self, b, instr, get, spec):
        """A gather runs on blocks when the operand is split only along dimensions it
        slices whole (passthrough: the output's matching offset dims are split alike) and
        the indices only along their batch dimensions (the output's batch dims are split
        alike); the indices stay global since the indexed dims are whole. None: fall back
        to running replicated."""
        operand, indices = instr.operands
        at = instr.attrs
        if at.get("operand_batching_dims") or at.get("start_indices_batching_dims"):
            return None
        start_map, collapsed = set(at["start_index_map"]), set(at["collapsed_slice_dims"])
        sizes, ivd = list(at["slice_sizes"]), at["index_vector_dim"]
        os_, is_ = spec[id(operand)], spec[id(indices)]
        want_o = tuple(a if d not in start_map and d not in collapsed
                       and sizes[d] == operand.shape.dims[d] else ()
                       for d, a in enumerate(os_))
        used = {a for axes in want_o for a in axes}
        want_i = tuple(() if d == ivd or set(a) & used else a for d, a in enumerate(is_))
        iotas = self._batched_by_iota(operand, indices, ivd, at["start_index_map"],
                                      collapsed, want_o, want_i, os_, is_, sizes)
        want_o, want_i = self._with_batches(iotas, want_o, want_i)
        if not any(want_o) and not any(want_i):
            return None
        out = [()] * instr.shape.rank
        window = [d for d in range(operand.shape.rank) if d not in collapsed]
        for k, od in enumerate(at["offset_dims"]):
            out[od] = want_o[window[k]]
        batch_out = [d for d in range(instr.shape.rank) if d not in at["offset_dims"]]
        batch_idx = [d for d in range(indices.shape.rank) if d != ivd]
        for od, idd in zip(batch_out, batch_idx, strict=True):
            out[od] = want_i[idd]
        out = tuple(out)
        local_sizes = tuple(n // self._parts(a) for n, a in zip(sizes, want_o, strict=True))
        idx = self._local_indices(b, indices, ivd, want_i, iotas, get)
        return self._clone(b, instr, [get(operand, want_o), idx],
                           self._local(instr.shape, out), slice_sizes=local_sizes), out

    def _scatter(self, b, instr, get, spec):
        """A scatter runs on blocks when the operand (and the updates' matching window
        dims) are split only along dimensions it updates whole, with the indices and the
        updates' scatter dims whole. None: fall back to running replicated."""
        operand, indices, updates = instr.operands
        at = instr.attrs
        if at.get("input_batching_dims") or at.get("scatter_indices_batching_dims"):
            return None
        to_op = set(at["scatter_dims_to_operand_dims"])
        inserted = set(at["inserted_window_dims"])
        window = [d for d in range(operand.shape.rank) if d not in inserted]
        uwd = list(at["update_window_dims"])
        os_, us = spec[id(operand)], spec[id(updates)]
        want_o = [()] * operand.shape.rank
        for k, d in enumerate(window):
            u = uwd[k]
            if d in to_op or updates.shape.dims[u] != operand.shape.dims[d]:
                continue
            want_o[d] = os_[d] or us[u]
        ivd, is_ = at["index_vector_dim"], spec[id(indices)]
        # The updates' scatter dims follow the indices' batch dims, in order.
        scatter_u = dict(zip([d for d in range(indices.shape.rank) if d != ivd],
                             [d for d in range(updates.shape.rank) if d not in uwd]))
        from_u = tuple(us[scatter_u[d]] if d in scatter_u else () for d in range(len(is_)))
        iotas = self._batched_by_iota(
            operand, indices, ivd, at["scatter_dims_to_operand_dims"], inserted,
            tuple(want_o), ((),) * len(is_), os_, tuple(a or c for a, c in zip(is_, from_u)),
            [1 if d in inserted else n for d, n in enumerate(operand.shape.dims)])
        want_o, want_i = self._with_batches(iotas, tuple(want_o), ((),) * len(is_))
        if not any(want_o):
            return None
        want_u = [()] * updates.shape.rank
        for k, d in enumerate(window):
            want_u[uwd[k]] = want_o[d]
        for d, u in scatter_u.items():
            want_u[u] = want_i[d]
        new_ops = [get(operand, want_o), self._local_indices(b, indices, ivd, want_i, iotas,
                                                             get),
                   get(updates, tuple(want_u))]
        return self._clone(b, instr, new_ops, self._local(instr.shape, want_o)), want_o

    # Indices that pair an iota with other indices (take_along_axis: row i takes
    # x[i, idx[i]]) index a split operand dim only where the iota runs along an indices dim
    # split alike: each device then gathers from (or scatters into) its own rows, with a
    # local iota.
    def _batched_by_iota(self, operand, indices, ivd, index_map, collapsed, want_o, want_i,
                         os_, is_, sizes) -> dict:
        """{operand dim: (indices dim, axes, piece)} for the index components (pieces of
        the indices) that are an iota along an indices dim whose split (or the operand
        dim's) they can share."""
        pieces = self._index_pieces(indices, ivd)
        if pieces is None:
            return {}
        found = {}
        for j, (_, k) in enumerate(pieces):
            o = index_map[j]
            if (k is None or o not in collapsed or sizes[o] != 1
                    or operand.shape.dims[o] != indices.shape.dims[k]):
                continue
            axes = is_[k] or os_[o]
            others = [a for d, a in enumerate(want_i) if d != k] + list(want_o) + [
                a for _, a, _ in found.values()]
            if axes and not set(axes) & {a for x in others for a in x} and (
                    not want_i[k] or want_i[k] == axes):
                found[o] = (k, axes, j)
        return found

    @staticmethod
    def _with_batches(iotas, want_o, want_i):
        want_o, want_i = list(want_o), list(want_i)
        for o, (k, axes, _) in iotas.items():
            want_o[o], want_i[k] = axes, axes
        return tuple(want_o), tuple(want_i)

    @staticmethod
    def _index_pieces(indices, ivd):
        """For indices concatenated along the index vector dim from one-wide pieces: per
        piece, (piece, k) with k the indices dim an iota piece runs along (else None)."""
        if (indices.opcode != "concatenate" or ivd >= indices.shape.rank
                or tuple(indices.attrs["dimensions"]) != (ivd,)):
            return None
        out = []
        for p in indices.operands:
            if p.shape.dims[ivd] != 1:
                return None
            src = p.operands[0] if p.opcode == "reshape" else p
            k = None
            if src.opcode == "iota":
                d = src.attrs["iota_dimension"]
                if src is p:
                    k = d if d != ivd else None
                elif list(src.shape.dims) == [n for i, n in enumerate(p.shape.dims)
                                              if i != ivd]:
                    k = d if d < ivd else d + 1
            out.append((p, k))
        return out

    def _local_indices(self, b, indices, ivd, want_i, iotas, get):
        if not iotas:
            return get(indices, want_i)
        batched = {j for _, _, j in iotas.values()}
        pieces = []
        for j, (p, k) in enumerate(self._index_pieces(indices, ivd)):
            if j in batched:
                local = self._local(p.shape, want_i)
                pieces.append(b.iota(local, k))
            else:
                pieces.append(get(p, want_i))
        return b.concatenate(pieces, ivd)

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


def _reshape_target(src, dst, d, k, spec):
    """The output dimension that input dimension `d` (split in `k`) becomes the major
    part of (kept whole, merged with the whole dimensions after it, or split into
    dimensions whose first one `k` divides), or None."""
    pre = math.prod(src[:d])
    for e in range(len(dst)):
        at = math.prod(dst[:e])
        if at > pre:
            break
        if at != pre or dst[e] % k:
            continue
        if dst[e] == src[d]:
            return e
        if dst[e] > src[d]:
            end, acc = d, 1
            while end < len(src) and acc < dst[e]:
                acc, end = acc * src[end], end + 1
            if acc == dst[e] and not any(spec[d + 1:end]):
                return e
        else:
            end, acc = e, 1
            while end < len(dst) and acc < src[d]:
                acc, end = acc * dst[end], end + 1
            if acc == src[d]:
                return e
    return None


def partition_module(module: Module, axis_names, axis_sizes, out_specs=None):
    """Partition `module` in place for the mesh; returns each output's dims spec."""
    p = SpmdPartitioner(axis_names, axis_sizes, out_specs)
    p.run(module)
    return p.result_specs


__all__ = ["SpmdPartitionError", "SpmdPartitioner", "partition_module", "spec_to_text"]
