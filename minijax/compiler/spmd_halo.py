"""Spatially split convolutions for the SPMD partitioner: halo exchange instead of
gathering the input (mixed into compiler/spmd_rules.py's convolution rule).

A convolution whose input is split along a spatial dimension (over mesh axes of k
devices, n = N / k rows each) keeps that split on its output when every device can compute
its own block of m = M / k output rows from its slab plus a few rows of its two
neighbours, as XLA's SPMD partitioner does. Output row o reads the padded input rows
[o s - lo, o s - lo + (w - 1) r + 1) (stride s, padding lo, window w dilated by r), so
device j needs the input rows [j m s - lo, j m s - lo + (m - 1) s + (w - 1) r + 1). It
sends its last L rows to the next device and its first R rows to the previous one (one
`collective-permute` each; the first device receives zeros on the left and the last one
zeros on the right, which are the convolution's zero padding at the global edges),
concatenates [left halo, slab, right halo] and slices the rows it needs (a static slice
when every device starts at the same offset, i.e. m s = n; else a dynamic slice at an
offset read from a table by partition-id); the local convolution then runs with no
padding along that dimension. L and R are the most any device needs beyond its slab.

Halo (the output stays split the same way): the dimension's window has no base (lhs)
dilation, the output size M is divisible by k, and L <= n and R <= n (each halo comes from
the adjacent device only). This covers stride 1 with SAME padding (L = lo, R = hi: the
common case), explicit and VALID padding whose output divides evenly (e.g. a 1-wide
kernel, or VALID over N + w - 1 = multiple of k), window dilation, and strides > 1 when
the output divides evenly. Several split spatial dimensions exchange halos one after the
other (the corners come with the second exchange).

Kernel gradients: when the kernel is split alike along that spatial dimension (the
gradient of a kernel is a convolution of the input with the split output gradient as
its "kernel"), block j convolves its rows [j t r - lo, ...) of the input (a halo as above,
t = the kernel rows per block) with its t kernel rows, and the partial sums are
all-reduced: the output dimension (the kernel's size) stays whole.

All-gather (the old rule, the output whole along that dimension): base dilation (the
input gradient of a strided convolution), an output size the devices do not divide
(VALID with w > 1 over an evenly split input, typically), a halo wider than a device's
slab (a big kernel or padding on small shards). A kernel split along a spatial dimension
the input is not split alike is gathered whole.
"""

from __future__ import annotations

import numpy as np

from minijax.compiler.hlo.ir import Shape


class SpmdHaloRules:
    """The halo exchange of a spatially split convolution, mixed into SpmdOpRules."""

    def _halo_plan(self, instr, lhs_dim: int, out_dim: int, spatial: int, axes,
                   contracted: bool = False):
        """(L, R, offsets, length) for lhs dimension `lhs_dim` (spatial dim `spatial` of
        the window) split over `axes`, or None when it must be gathered (docstring).
        `offsets[j]`: where block j's rows start in its [L halo, slab, R halo].
        `contracted`: the kernel is split alike along that dimension (a kernel gradient):
        block j convolves its rows of the kernel, the output dimension stays whole."""
        window = instr.attrs["window"]
        ones = (1,) * (spatial + 1)
        k = self._parts(axes)
        big_n = instr.operands[0].shape.dims[lhs_dim]
        big_m = instr.shape.dims[out_dim]
        if (window.get("lhs_dilate") or ones)[spatial] != 1 or big_n % k or big_m == 0:
            return None
        n = big_n // k
        s = (window.get("stride") or ones)[spatial]
        r = (window.get("rhs_dilate") or ones)[spatial]
        lo = tuple((window.get("pad") or ((0, 0),) * (spatial + 1))[spatial])[0]
        size = window["size"][spatial]
        if contracted:
            if size % k:
                return None
            t = size // k   # the kernel rows of each block
            starts = [j * t * r - lo for j in range(k)]
            length = (big_m - 1) * s + (t - 1) * r + 1
        else:
            if big_m % k:
                return None
            m = big_m // k
            starts = [j * m * s - lo for j in range(k)]
            length = (m - 1) * s + (size - 1) * r + 1
        left = max(0, max(j * n - starts[j] for j in range(k)))
        right = max(0, max(starts[j] + length - (j + 1) * n for j in range(k)))
        if left > n or right > n:
            return None
        offsets = [starts[j] - (j * n - left) for j in range(k)]
        return left, right, offsets, length

    def _neighbour_pairs(self, axes, step: int) -> str:
        """source_target_pairs sending each device's data to the device whose block along
        `axes` is `step` further (same coordinates along the other mesh axes)."""
        block = self._block_index(axes)
        coords = np.indices(self.ids.shape).reshape(len(self.names), -1)
        rest = [self.names.index(a) for a in self.names if a not in axes]
        where = {(tuple(coords[rest, p]), int(block[p])): p for p in range(self.size)}
        pairs = []
        for p in range(self.size):
            q = where.get((tuple(coords[rest, p]), int(block[p]) + step))
            if q is not None:
                pairs.append(f"{{{p},{q}}}")
        return "{" + ",".join(pairs) + "}"

    def _permute(self, b, x, pairs: str):
        return b.add_instruction("collective-permute", [x], {
            "channel_id": "1", "source_target_pairs": pairs}, shape=x.shape)

    def _exchange_halo(self, b, x, dim: int, axes, plan):
        """This device's rows of `x` (its slab along `dim`) widened by its neighbours'
        halos and cut to the rows its output block reads."""
        left, right, offsets, length = plan
        n = x.shape.dims[dim]
        rank = x.shape.rank

        def rows(v, lo, hi):
            starts = [0] * rank
            limits = list(v.shape.dims)
            starts[dim], limits[dim] = lo, hi
            return b.slice(v, starts, limits)
        parts = []
        if left:
            parts.append(self._permute(b, rows(x, n - left, n), self._neighbour_pairs(axes, 1)))
        parts.append(x)
        if right:
            parts.append(self._permute(b, rows(x, 0, right), self._neighbour_pairs(axes, -1)))
        wide = b.concatenate(parts, dim) if len(parts) > 1 else x
        total = n + left + right
        if len(set(offsets)) == 1:
            off = offsets[0]
            return wide if (off, length) == (0, total) else rows(wide, off, off + length)
        table = np.asarray(offsets, np.int64)[self._block_index(axes)].astype(np.int32)
        at = b.reshape(b.dynamic_slice(b.constant(table), [self._pid_s32(b)], (1,)), ())
        zero = b.constant(np.int32(0))
        sizes = list(wide.shape.dims)
        sizes[dim] = length
        return b.dynamic_slice(wide, [at if d == dim else zero for d in range(rank)],
                               tuple(sizes))

    def _halo_convolution(self, b, instr, get, want_l, want_r, out, halos):
        """The convolution on blocks with the halo dims (lhs dim -> (axes, plan, spatial,
        contracted)) exchanged and their padding dropped (a contracted one's window is
        the kernel's block); `out` is the output's dims spec."""
        lhs, rhs = instr.operands
        x = get(lhs, tuple(want_l))
        for d, (axes, plan, _, _) in halos.items():
            x = self._exchange_halo(b, x, d, axes, plan)
        window = dict(instr.attrs["window"])
        nsp = lhs.shape.rank - 2
        pad = [tuple(p) for p in (window.get("pad") or ((0, 0),) * nsp)]
        size = list(window["size"])
        for axes, _, spatial, contracted in halos.values():
            pad[spatial] = (0, 0)
            if contracted:
                size[spatial] //= self._parts(axes)
        window["pad"], window["size"] = tuple(pad), tuple(size)
        local = self._local(instr.shape, out)
        return b.add_instruction("convolution", [x, get(rhs, tuple(want_r))],
                                 {**instr.attrs, "window": window}, dict(instr.called),
                                 shape=Shape(local.element_type, local.dims),
                                 metadata=instr.metadata, name=instr.name)
