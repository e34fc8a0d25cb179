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
from minijax.compiler.hlo.sharding import spec_to_text, text_to_spec
from minijax.compiler.passes.base import Pass

_ELEMENTWISE = (opcodes.select(family="elementwise") - {"bitcast-convert"})


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
        if self._pid_instr is None:
            self._pid_instr = b.add_instruction("partition-id", [], shape=Shape("u32", ()))
        return self._pid_instr

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
        old = module.entry
        comp = Computation(old.name)
        b = HloBuilder(comp)
        self._pid_instr = None
        self._adds: dict = {}
        new: dict = {}
        spec: dict = {}

        def get(op, want=None):
            s = spec[id(op)]
            if want is None or s is None:
                return new[id(op)]
            return self._reshard(b, new[id(op)], s, want)

        def replicated(op):
            s = spec[id(op)]
            return new[id(op)] if s is None else self._reshard(b, new[id(op)], s,
                                                              ((),) * len(s))

        for instr in old.instructions:
            if instr is old.root and instr.opcode == "tuple":
                continue  # the outputs are resharded below, each to its own spec
            out, s = self._partition(b, instr, get, replicated, spec, module)
            new[id(instr)], spec[id(instr)] = out, s
        root = old.root
        if root.opcode != "tuple":
            raise SpmdPartitionError("the entry's root must be a tuple of the outputs")
        outs, specs = [], []
        for k, op in enumerate(root.operands):
            want = None if self.out_specs is None else self.out_specs[k]
            cur = spec[id(op)]
            if want is None:
                want = cur if cur is not None else ((),) * op.shape.rank
            outs.append(self._reshard(b, new[id(op)], cur, want) if cur is not None
                        else new[id(op)])
            specs.append(want)
        b.set_root(b.tuple(outs))
        module.computations[module.computations.index(old)] = comp
        module.entry = comp
        for add in self._adds.values():
            module.add_computation(add)
        self.result_specs = specs
        return True

    def _partition(self, b, instr: Instruction, get, replicated, spec, module):
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
            return self._reshape(b, instr, get, replicated, spec)
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
            return c, (None if instr.shape.is_tuple else ((),) * instr.shape.rank)
        # Anything else runs replicated on whole operands.
        new_ops = [replicated(o) for o in ops]
        out = self._clone(b, instr, new_ops, instr.shape)
        return out, (None if instr.shape.is_tuple else ((),) * instr.shape.rank)

    def _clone(self, b, instr, operands, shape, **attrs):
        return b.add_instruction(instr.opcode, operands, {**instr.attrs, **attrs},
                                 dict(instr.called),
                                 shape=shape, literal=instr.literal, metadata=instr.metadata,
                                 name=instr.name)

    def _reshape(self, b, instr, get, replicated, spec):
        src_shape, dst = instr.operands[0].shape.dims, instr.shape.dims
        src = spec[id(instr.operands[0])]
        split = [d for d, a in enumerate(src) if a]
        keep = 0
        while keep < min(len(src_shape), len(dst)) and src_shape[keep] == dst[keep]:
            keep += 1
        if split and max(split) < keep:
            s = tuple(src[d] if d < keep else () for d in range(len(dst)))
            return self._clone(b, instr, [get(instr.operands[0])], self._local(instr.shape,
                                                                                s)), s
        s = ((),) * len(dst)
        return self._clone(b, instr, [replicated(instr.operands[0])], instr.shape), s

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


def partition_module(module: Module, axis_names, axis_sizes, out_specs=None):
    """Partition `module` in place for the mesh; returns each output's dims spec."""
    p = SpmdPartitioner(axis_names, axis_sizes, out_specs)
    p.run(module)
    return p.result_specs


__all__ = ["SpmdPartitionError", "SpmdPartitioner", "partition_module", "spec_to_text"]
