"""The SPMD partitioner's rules for ops whose operands' splits depend on their
dimension numbers (mixed into compiler/passes/spmd_partitioner.py). Each picks the splits
its operands are resharded to and its result's split, and emits the op on blocks:
- reshape keeps a split dimension's split on the output dimension that starts at the
  same row-major offset when the devices divide it (its per-device block is then a
  contiguous leading block there: (8, 6) row-split stays row-split as (6, 8)); a split
  with no such dimension joins the one before it when each device holds one index of
  the dimensions in between ((2, 48) split (a, b) -> (96,) split over (a, b));
- slice, dynamic-slice, pad and reverse keep the splits of dimensions they leave whole;
  sort and a reduce of several operands (argmax) those of dimensions they do not sort or
  reduce;
  dynamic-update-slice those of dimensions its update covers whole (scan's xs and ys);
- convolution keeps a split batch and a kernel's split output features; input features
  split on both operands alike (a kernel's gradient over a split batch) are summed by an
  `all-reduce`; a spatial split of the input stays split through a halo exchange
  with the neighbouring devices (compiler/spmd_halo.py says when), else is gathered;
  split alike on the kernel too (a kernel's gradient), the blocks' partial sums are
  all-reduced;
- dot keeps the lhs's batch and contracting split, reshards the rhs to match, keeps both
  operands' free-dim splits (an axis used twice is gathered on the rhs), and adds an
  `all-reduce` over the contracting axes: data-parallel (batch rows split), model-parallel
  (weight columns split) and contracting-dim-split products need no resharding;
- gather keeps the operand's splits of dimensions it slices whole (and never indexes) and
  the indices' splits of their batch dimensions; scatter keeps the operand's (and the
  updates' window) splits of dimensions it updates whole; both keep a split of an operand
  dimension indexed by an iota over an indices dimension split alike (take_along_axis's
  row index), with a local iota.
They use the pass's mesh helpers (`_local`, `_parts`, `_clone`, `_all_reduce`,
`_add_computation`); `get(op, want)` is the walk's operand lookup, resharding to `want`.
"""

from __future__ import annotations

import math

from minijax.compiler.hlo.shape_inference import parse_dim_labels
from minijax.compiler.spmd_halo import SpmdHaloRules


class SpmdOpRules(SpmdHaloRules):
    """Per-opcode partitioning rules, mixed into SpmdPartitioner."""

    def _reshape(self, b, instr, get, spec):
        """A split dimension stays split along the output dimension that starts where it
        starts (row-major) when the devices divide that one (`_reshape_target`). One that
        has no such dimension joins the split before it when every device holds a single
        index of the dimensions in between ((2, 48) split ('a', 'b') -> (96,) split
        ('a', 'b'): device (i, j) holds the contiguous block 2 i + j). Other splits are
        gathered first."""
        x = instr.operands[0]
        xs, src = spec[id(x)], x.shape.dims
        keep, out = list(xs), [()] * instr.shape.rank
        last = None   # (output dim, input dim) of the split kept last
        for d, axes in enumerate(xs):
            if not axes:
                continue
            e = _reshape_target(src, instr.shape.dims, d, self._parts(axes))
            if e is not None and not out[e]:
                out[e], last = axes, (e, d)
                continue
            keep[d] = ()
            if last is not None:
                e, p = last
                k = self._parts(out[e] + axes)
                if instr.shape.dims[e] % k == 0 and all(
                        n // self._parts(keep[c]) == 1 for c, n in enumerate(src[p:d], p)):
                    out[e], keep[d], last = out[e] + axes, axes, (e, d)
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

    def _along_whole_dims(self, b, instr, get, replicated, spec):
        """sort, and a reduce of several operands (argmax's value-index pairs), run on
        blocks split along the dimensions they do not sort or reduce (those are gathered
        first): each row is sorted or reduced whole on one device."""
        n = len(instr.operands) // (2 if instr.opcode == "reduce" else 1)
        arrays, inits = instr.operands[:n], instr.operands[n:]
        dims = set(instr.attrs["dimensions"])
        cands = [spec[id(o)] for o in arrays]
        s = max(cands, key=lambda c: sum(len(a) for d, a in enumerate(c) if d not in dims))
        s = tuple(() if d in dims else a for d, a in enumerate(s))
        kept = s if instr.opcode == "sort" else tuple(a for d, a in enumerate(s)
                                                      if d not in dims)
        out = [kept] * n if instr.shape.is_tuple else kept
        new_ops = [get(o, s) for o in arrays] + [replicated(o) for o in inits]
        return self._clone(b, instr, new_ops, self._local(instr.shape, out)), out

    def _convolution(self, b, instr, get, spec):
        """A split batch stays split (each device convolves its images); a kernel's split
        output features stay split; input features split on both operands alike (the
        kernel's gradient over a split batch) give partial sums, all-reduced. A spatially
        split input keeps its split through a halo exchange where `_halo_plan` allows;
        other spatial splits and grouped convolutions' features are gathered first."""
        lhs, rhs = instr.operands
        ll, rl, ol = parse_dim_labels(instr.attrs["dim_labels"])
        batch_groups = (instr.attrs.get("batch_group_count") or 1) > 1
        ungrouped = not batch_groups and (instr.attrs.get("feature_group_count") or 1) == 1
        ls, rs = spec[id(lhs)], spec[id(rhs)]
        lb, lf, ro, ri = ll.index("b"), ll.index("f"), rl.index("o"), rl.index("i")
        want_l, want_r = [()] * lhs.shape.rank, [()] * rhs.shape.rank
        if not batch_groups:
            want_l[lb] = ls[lb]
        if ungrouped and not set(ls[lf]) & set(want_l[lb]):
            want_l[lf] = want_r[ri] = ls[lf]
        if ungrouped and not set(rs[ro]) & {a for axes in want_l for a in axes}:
            want_r[ro] = rs[ro]
        out = [()] * instr.shape.rank
        out[ol.index("b")], out[ol.index("f")] = want_l[lb], want_r[ro]
        # Spatial splits of the input: a halo exchange keeps them (compiler/spmd_halo.py);
        # split alike on the kernel (a kernel gradient), each block gives a partial sum.
        halos, summed = {}, tuple(want_l[lf])
        used = {a for axes in want_l + want_r for a in axes}
        for i in range(lhs.shape.rank - 2):
            d, e, rd = ll.index(str(i)), ol.index(str(i)), rl.index(str(i))
            axes = ls[d]
            if not axes or set(axes) & used:
                continue
            contracted = rs[rd] == axes
            plan = self._halo_plan(instr, d, e, i, axes, contracted)
            if plan is not None:
                halos[d] = (axes, plan, i, contracted)
                want_l[d] = axes
                if contracted:
                    want_r[rd] = axes
                    summed += axes
                else:
                    out[e] = axes
                used |= set(axes)
        s = tuple(out)
        if halos:
            local = self._halo_convolution(b, instr, get, want_l, want_r, s, halos)
        else:
            local = self._clone(b, instr, [get(lhs, tuple(want_l)), get(rhs, tuple(want_r))],
                                self._local(instr.shape, s))
        if summed:
            add = self._add_computation(b, instr.shape.element_type)
            local = self._all_reduce(b, local, summed, add)
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


def _reshape_target(src, dst, d, k):
    """The output dimension that input dimension `d` (split in `k`) stays split along, or
    None. Viewed row-major, `d` is the major dimension of the block of elements after
    the dimensions before it (their product `pre`); an output dimension `e` whose
    preceding dimensions also multiply to `pre` is the major dimension of the same
    block, so when `k` divides it, device j's contiguous 1/k of that block along `d` is
    its 1/k along `e` (a row-split (8, 6) stays row-split as (6, 8), (48,) or (2, 4, 6),
    as JAX keeps it). Dimensions split this way map independently: each one's block
    lies inside the one before it."""
    pre = math.prod(src[:d])
    for e in range(len(dst)):
        at = math.prod(dst[:e])
        if at > pre:
            break
        if at == pre and dst[e] % k == 0:
            return e
    return None
