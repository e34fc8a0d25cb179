"""Contractions: einsum (with a greedy contraction order), einsum_path, dot, vdot, vecdot,
inner, outer, matmul, tensordot, kron, cross.

einsum works in four steps: parse the subscripts into per-operand label lists (ellipsis
dimensions get private labels), take diagonals of labels repeated within one operand (a
mask and a sum), sum out labels that occur in a single operand and not in the output, then
contract the operands pairwise with lax.dot_general in an order chosen by a greedy cost
heuristic (or left to right with optimize=False).
"""

from __future__ import annotations

import operator
import string

import numpy as np

from minijax import dtypes, lax
from minijax.core import get_aval
from minijax.lax.dot_conv import check_no_out_sharding, dot_general
from minijax.numpy import util
from minijax.numpy.util import canonicalize_axis, check_arraylike, promote_dtypes, to_array

__all__ = ["cross", "dot", "einsum", "einsum_path", "inner", "kron", "matmul", "outer",
           "tensordot", "vdot", "vecdot"]

_LETTERS = set(string.ascii_letters)
_ELLIPSIS_BASE = 0x100  # private labels for ellipsis dimensions (never user letters)


def _shape(x):
    return get_aval(x).shape


# --------------------------------------------------------------------------- parsing


def _sublist_to_str(sublist) -> str:
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        else:
            s = operator.index(s)
            if not 0 <= s < 52:
                raise ValueError(f"einsum: subscript index {s} in the operand-list form must "
                                 "be in [0, 52)")
            out.append(string.ascii_letters[s])
    return "".join(out)


def _split_operand_list(args):
    """einsum(op0, sub0, op1, sub1, ..., [out]) -> (subscripts, operands)."""
    args = list(args)
    operands, terms = [], []
    while len(args) >= 2:
        operands.append(args.pop(0))
        terms.append(_sublist_to_str(args.pop(0)))
    subscripts = ",".join(terms)
    if args:
        subscripts += "->" + _sublist_to_str(args[0])
    return subscripts, operands


def _parse_term(term: str, what: str, ndim: int | None):
    """Labels of one term; '...' becomes None (expanded later)."""
    labels = []
    i = 0
    while i < len(term):
        if term.startswith("...", i):
            if None in labels:
                raise ValueError(f"einsum: {what} '{term}' contains more than one ellipsis")
            labels.append(None)
            i += 3
            continue
        ch = term[i]
        if ch not in _LETTERS:
            raise ValueError(f"einsum: invalid subscript character {ch!r} in {what} "
                             f"'{term}'; subscripts must be letters a-z, A-Z or '...'")
        labels.append(ch)
        i += 1
    if ndim is not None:
        named = len(labels) - (1 if None in labels else 0)
        if (None not in labels and named != ndim) or named > ndim:
            raise ValueError(f"einsum: {what} has {ndim} dimension(s) but its subscripts "
                             f"'{term}' name {named}")
    return labels


def parse_subscripts(subscripts: str, shapes):
    """(input label lists, output label list, sizes) with ellipses expanded."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, rhs = subscripts.split("->", 1)
        if "->" in rhs:
            raise ValueError("einsum: subscripts contain more than one '->'")
    else:
        lhs, rhs = subscripts, None
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: subscripts '{subscripts}' name {len(terms)} operand(s) but "
                         f"{len(shapes)} were given")
    parsed = [_parse_term(t, f"operand {i}", len(s))
              for i, (t, s) in enumerate(zip(terms, shapes, strict=True))]
    n_ell = max((len(s) - len(p) + 1 for p, s in zip(parsed, shapes, strict=True)
                 if None in p), default=0)
    ell_labels = [chr(_ELLIPSIS_BASE + k) for k in range(n_ell)]
    inputs = []
    for p, s in zip(parsed, shapes, strict=True):
        if None in p:
            k = len(s) - len(p) + 1
            pos = p.index(None)
            p = p[:pos] + ell_labels[n_ell - k:] + p[pos + 1:]
        inputs.append(p)
    sizes: dict = {}
    for i, (labels, shape) in enumerate(zip(inputs, shapes, strict=True)):
        for lab, d in zip(labels, shape, strict=True):
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = d
            elif d not in (1, prev):
                name = "an ellipsis dimension" if ord(lab) >= _ELLIPSIS_BASE else f"'{lab}'"
                raise ValueError(f"einsum: size of label {name} for operand {i} ({d}) does not "
                                 f"match previous terms ({prev})")
    if rhs is None:
        counts: dict = {}
        for labels in inputs:
            for lab in labels:
                counts[lab] = counts.get(lab, 0) + 1
        output = ell_labels + sorted(lab for lab, c in counts.items()
                                     if c == 1 and lab in _LETTERS)
    else:
        out = _parse_term(rhs, "output", None)
        if None in out:
            pos = out.index(None)
            out = out[:pos] + ell_labels + out[pos + 1:]
        # An output without '...' sums over the ellipsis dimensions, as JAX (opt_einsum)
        # does; NumPy raises there instead.
        for lab in out:
            if out.count(lab) > 1:
                raise ValueError(f"einsum: output subscript '{lab}' appears more than once")
            if lab not in sizes:
                raise ValueError(f"einsum: output subscript '{lab}' does not appear in any "
                                 "input term")
        output = out
    return inputs, output, sizes


# --------------------------------------------------------------------------- single operands


def _take_diagonals(x, labels):
    """Merge repeated labels of one operand by taking the diagonal."""
    while True:
        dup = next((lab for lab in labels if labels.count(lab) > 1), None)
        if dup is None:
            return x, labels
        first = labels.index(dup)
        second = labels.index(dup, first + 1)
        shape = _shape(x)
        mask = lax.eq(util.iota(np.int32, shape, first), util.iota(np.int32, shape, second))
        x = lax.select_n(mask, lax.full(shape, 0, get_aval(x).dtype), x)
        x = _reduce_add(x, (second,))
        labels = labels[:second] + labels[second + 1:]


def _sum_labels(x, labels, drop):
    axes = tuple(i for i, lab in enumerate(labels) if lab in drop)
    if not axes:
        return x, labels
    return _reduce_add(x, axes), [lab for lab in labels if lab not in drop]


def _reduce_add(x, axes):
    """Sum over axes; on booleans the sum is `or` (as JAX's einsum)."""
    if get_aval(x).dtype == np.bool_:
        return lax.reduce_or(x, axes)
    return lax.reduce_sum(x, axes)


def _broadcast_to_sizes(x, labels, sizes):
    shape = _shape(x)
    target = tuple(sizes[lab] for lab in labels)
    if shape == target:
        return x
    return lax.broadcast_in_dim(x, target, tuple(range(len(shape))))


# --------------------------------------------------------------------------- contraction order


def _pair_cost(la, lb, keep, sizes):
    union = set(la) | set(lb)
    flops = 1
    for lab in union:
        flops *= max(sizes[lab], 1)
    out = 1
    for lab in union & keep:
        out *= max(sizes[lab], 1)
    return flops, out


def contraction_path(inputs, output, sizes, optimize):
    """A list of pairs (i, j) of positions in the shrinking operand list."""
    labels = [list(x) for x in inputs]
    path = []
    while len(labels) > 1:
        if optimize is False or optimize is None:
            i, j = 0, 1
        else:
            best = None
            for a in range(len(labels)):
                for b in range(a + 1, len(labels)):
                    others = set(output)
                    for c, lc in enumerate(labels):
                        if c not in (a, b):
                            others.update(lc)
                    cost = _pair_cost(labels[a], labels[b], others, sizes)
                    if best is None or cost < best[0]:
                        best = (cost, a, b)
            _, i, j = best
        path.append((i, j))
        others = set(output)
        for c, lc in enumerate(labels):
            if c not in (i, j):
                others.update(lc)
        merged = [lab for lab in dict.fromkeys(labels[i] + labels[j]) if lab in others]
        labels = [lc for c, lc in enumerate(labels) if c not in (i, j)] + [merged]
    return path


def _contract_pair(a, la, b, lb, keep, preferred, precision):
    batch = [lab for lab in la if lab in lb and lab in keep]
    contract = [lab for lab in la if lab in lb and lab not in keep]
    dims = (([la.index(c) for c in contract], [lb.index(c) for c in contract]),
            ([la.index(c) for c in batch], [lb.index(c) for c in batch]))
    out = dot_general(a, b, dims, precision=precision, preferred_element_type=preferred)
    labels = batch + [lab for lab in la if lab not in lb] + [lab for lab in lb if lab not in la]
    return out, labels


def einsum(subscripts, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
    """Einstein summation (NumPy's `einsum`): string subscripts with ellipsis and implicit
    output, or the operand-list form `einsum(a, [0, 1], b, [1, 2], [0, 2])`.

    `optimize` False contracts left to right; any other value picks the pairwise order
    greedily by the cost of each contraction."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    check_no_out_sharding("einsum", out_sharding)
    if not isinstance(subscripts, str):
        subscripts, operands = _split_operand_list((subscripts,) + operands)
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    check_arraylike("einsum", *operands)
    operands = promote_dtypes(*operands) if len(operands) > 1 else [to_array(operands[0])]
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
    inputs, output, sizes = parse_subscripts(subscripts, [_shape(x) for x in operands])
    arrays = []
    for x, labels in zip(operands, inputs, strict=True):
        x, labels = _take_diagonals(x, list(labels))
        arrays.append((x, labels))
    path = contraction_path([lab for _, lab in arrays], output, sizes, optimize)
    arrays = _sum_unique(arrays, output)
    for i, j in path:
        (a, la), (b, lb) = arrays[i], arrays[j]
        rest = [arr for c, arr in enumerate(arrays) if c not in (i, j)]
        keep = set(output)
        for _, lc in rest:
            keep.update(lc)
        a = _broadcast_to_sizes(a, la, sizes)
        b = _broadcast_to_sizes(b, lb, sizes)
        merged = _contract_pair(a, la, b, lb, keep, preferred_element_type, precision)
        arrays = _sum_unique(rest + [merged], output)
    (x, labels), = arrays
    x, labels = _sum_labels(x, labels, set(labels) - set(output))
    x = _broadcast_to_sizes(x, labels, sizes)
    if labels != output:
        x = lax.transpose(x, tuple(labels.index(lab) for lab in output))
    if preferred_element_type is not None and get_aval(x).dtype != preferred_element_type:
        x = lax.convert_element_type(x, preferred_element_type)
    return x


def _sum_unique(arrays, output):
    """Sum out labels that occur in exactly one operand and not in the output."""
    counts: dict = {}
    for _, labels in arrays:
        for lab in set(labels):
            counts[lab] = counts.get(lab, 0) + 1
    if len(arrays) == 1:
        return arrays
    result = []
    for x, labels in arrays:
        drop = {lab for lab in labels if counts[lab] == 1 and lab not in output}
        result.append(_sum_labels(x, labels, drop))
    return result


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The pairwise contraction order einsum would use, as NumPy's (path, description)."""
    if not isinstance(subscripts, str):
        subscripts, operands = _split_operand_list((subscripts,) + operands)
    shapes = [np.shape(x) if not hasattr(x, "aval") else _shape(x) for x in operands]
    inputs, output, sizes = parse_subscripts(subscripts, shapes)
    path = contraction_path(inputs, output, sizes, optimize)
    lines = [f"  Complete contraction:  {subscripts}", f"  Naive scaling:  {len(sizes)}"]
    lines += [f"  contraction {k}: operands {p}" for k, p in enumerate(path)]
    return ["einsum_path"] + path, "\n".join(lines)


# --------------------------------------------------------------------------- dot family


def _mul(a, b):
    a, b = util.promote_args("multiply", a, b)
    return lax.mul(a, b)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's dot: a product for scalars, an inner product for vectors, a matrix product,
    and for N-d arrays a sum over a's last axis and b's second-to-last axis."""
    check_arraylike("dot", a, b)
    a, b = promote_dtypes(a, b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if na == 0 or nb == 0:
        return _mul(a, b)
    contract_b = 0 if nb == 1 else nb - 2
    _check_contract("dot", a, b, na - 1, contract_b)
    return dot_general(a, b, (((na - 1,), (contract_b,)), ((), ())), precision=precision,
                       preferred_element_type=preferred_element_type)


def _check_contract(name, a, b, ax, bx):
    if _shape(a)[ax] != _shape(b)[bx]:
        raise ValueError(f"{name}: shapes {_shape(a)} and {_shape(b)} are not aligned: "
                         f"dimension {ax} of the first ({_shape(a)[ax]}) != dimension {bx} "
                         f"of the second ({_shape(b)[bx]})")


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating the first."""
    check_arraylike("vdot", a, b)
    a, b = promote_dtypes(a, b)
    if get_aval(a).dtype.kind == "c":
        a = lax.conj(a)
    return dot(lax.reshape(a, (get_aval(a).size,)), lax.reshape(b, (get_aval(b).size,)),
               precision=precision, preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Vector dot product along `axis` (conjugating x1), broadcasting the other axes."""
    check_arraylike("vecdot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    n1, n2 = get_aval(x1).ndim, get_aval(x2).ndim
    a1 = canonicalize_axis(axis, n1)
    a2 = canonicalize_axis(axis, n2)
    if _shape(x1)[a1] != _shape(x2)[a2]:
        raise ValueError(f"vecdot: axis {axis} of x1 {_shape(x1)} and x2 {_shape(x2)} must "
                         "have the same size")
    x1 = lax_moveaxis(x1, a1, n1 - 1)
    x2 = lax_moveaxis(x2, a2, n2 - 1)
    if get_aval(x1).dtype.kind == "c":
        x1 = lax.conj(x1)
    return _vecdot_last(x1, x2, precision, preferred_element_type)


def _vecdot_last(x1, x2, precision, preferred):
    s1, s2 = _shape(x1), _shape(x2)
    batch = util.broadcast_shapes(s1[:-1], s2[:-1])
    n = s1[-1]
    x1 = util.broadcast_to(x1, batch + (n,))
    x2 = util.broadcast_to(x2, batch + (n,))
    nb = len(batch)
    bd = tuple(range(nb))
    return dot_general(x1, x2, (((nb,), (nb,)), (bd, bd)), precision=precision,
                       preferred_element_type=preferred)


def lax_moveaxis(x, src, dst):
    if src == dst:
        return x
    perm = [i for i in range(get_aval(x).ndim) if i != src]
    perm.insert(dst, src)
    return lax.transpose(x, tuple(perm))


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum product over the last axes of a and b (a product if either is a scalar)."""
    check_arraylike("inner", a, b)
    a, b = promote_dtypes(a, b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if na == 0 or nb == 0:
        return _mul(a, b)
    _check_contract("inner", a, b, na - 1, nb - 1)
    return dot_general(a, b, (((na - 1,), (nb - 1,)), ((), ())), precision=precision,
                       preferred_element_type=preferred_element_type)


def outer(a, b, out=None):
    """Outer product of the flattened inputs: out[i, j] = a[i] * b[j]."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    check_arraylike("outer", a, b)
    a, b = promote_dtypes(a, b)
    m, n = get_aval(a).size, get_aval(b).size
    a = lax.broadcast_in_dim(lax.reshape(a, (m,)), (m, n), (0,))
    b = lax.broadcast_in_dim(lax.reshape(b, (n,)), (m, n), (1,))
    return lax.mul(a, b)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules: batch dimensions broadcast, a 1-D first operand
    is a row vector and a 1-D second operand a column vector (their axis is removed)."""
    check_arraylike("matmul", a, b)
    a, b = promote_dtypes(a, b)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        raise ValueError(f"matmul: operands must not be scalars, got shapes {sa} and {sb}; "
                         "use * (jnp.multiply) for scalar products")
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        a = lax.reshape(a, (1,) + sa)
    if b_vec:
        b = lax.reshape(b, sb + (1,))
    sa, sb = _shape(a), _shape(b)
    if sa[-1] != sb[-2]:
        raise ValueError(f"matmul: contracting dimensions differ: shapes {_shape(a)} and "
                         f"{_shape(b)} (sizes {sa[-1]} and {sb[-2]})")
    try:
        batch = util.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of shapes {sa} and {sb} do not "
                         "broadcast") from None
    nb = len(batch)
    if len(sb) == 2 and nb:
        # A shared matrix: fold a's batch into its rows instead of broadcasting b.
        out = dot_general(a, b, (((len(sa) - 1,), (0,)), ((), ())), precision=precision,
                          preferred_element_type=preferred_element_type)
        out = util.broadcast_to(out, batch + _shape(out)[-2:])
    else:
        a = util.broadcast_to(a, batch + sa[-2:])
        b = util.broadcast_to(b, batch + sb[-2:])
        bd = tuple(range(nb))
        out = dot_general(a, b, (((nb + 1,), (nb,)), (bd, bd)), precision=precision,
                          preferred_element_type=preferred_element_type)
    shape = _shape(out)
    if a_vec and b_vec:
        return lax.reshape(out, shape[:-2])
    if a_vec:
        return lax.reshape(out, shape[:-2] + shape[-1:])
    if b_vec:
        return lax.reshape(out, shape[:-1])
    return out


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sum products over `axes`: an int N (a's last N with b's first N), a pair of ints, or a
    pair of sequences of axes."""
    check_arraylike("tensordot", a, b)
    a, b = promote_dtypes(a, b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(na, nb):
            raise ValueError(f"tensordot: number of axes {n} must be between 0 and "
                             f"{min(na, nb)} for shapes {_shape(a)} and {_shape(b)}")
        ax_a, ax_b = list(range(na - n, na)), list(range(n))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
        if len(ax_a) != len(ax_b):
            raise ValueError(f"tensordot: axes {axes} must name equally many axes of a and b")
        ax_a = [canonicalize_axis(x, na) for x in ax_a]
        ax_b = [canonicalize_axis(x, nb) for x in ax_b]
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of axis sequences, got "
                        f"{axes!r}")
    for x, y in zip(ax_a, ax_b, strict=True):
        _check_contract("tensordot", a, b, x, y)
    return dot_general(a, b, ((tuple(ax_a), tuple(ax_b)), ((), ())), precision=precision,
                       preferred_element_type=preferred_element_type)


def kron(a, b):
    """Kronecker product: blocks a[i] * b."""
    check_arraylike("kron", a, b)
    a, b = promote_dtypes(a, b)
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa = (1,) * (nd - len(sa)) + sa
    sb = (1,) * (nd - len(sb)) + sb
    inter = tuple(d for pair in zip(sa, sb, strict=True) for d in pair)
    a_wide = lax.broadcast_in_dim(lax.reshape(a, sa), inter, tuple(range(0, 2 * nd, 2)))
    b_wide = lax.broadcast_in_dim(lax.reshape(b, sb), inter, tuple(range(1, 2 * nd, 2)))
    out = lax.mul(a_wide, b_wide)
    return lax.reshape(out, tuple(x * y for x, y in zip(sa, sb, strict=True)))


def _component(x, i):
    return lax.index_in_dim(x, i, get_aval(x).ndim - 1, keepdims=False)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 2- or 3-element vectors along axisa/axisb (or `axis`), with the
    result's vector axis at axisc; 2-element inputs give the z component only."""
    check_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(a, b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    a = lax_moveaxis(a, canonicalize_axis(axisa, na), na - 1)
    b = lax_moveaxis(b, canonicalize_axis(axisb, nb), nb - 1)
    da, db = _shape(a)[-1], _shape(b)[-1]
    if da not in (2, 3) or db not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got {da} and {db}")
    batch = util.broadcast_shapes(_shape(a)[:-1], _shape(b)[:-1])
    a = util.broadcast_to(a, batch + (da,))
    b = util.broadcast_to(b, batch + (db,))
    zero = lax.full(batch, 0, get_aval(a).dtype)
    a0, a1 = _component(a, 0), _component(a, 1)
    b0, b1 = _component(b, 0), _component(b, 1)
    a2 = _component(a, 2) if da == 3 else zero
    b2 = _component(b, 2) if db == 3 else zero
    z = lax.sub(lax.mul(a0, b1), lax.mul(a1, b0))
    if da == 2 and db == 2:
        return z
    x = lax.sub(lax.mul(a1, b2), lax.mul(a2, b1))
    y = lax.sub(lax.mul(a2, b0), lax.mul(a0, b2))
    parts = [lax.broadcast_in_dim(c, batch + (1,), tuple(range(len(batch)))) for c in (x, y, z)]
    out = lax.concatenate(parts, len(batch))
    return lax_moveaxis(out, len(batch), canonicalize_axis(axisc, len(batch) + 1))
