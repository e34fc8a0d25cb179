"""Shape inference for HLO instructions, following XLA's rules.

`infer_shape(opcode, operand_shapes, attrs, called)` returns the result Shape (default
layout) or None for opcodes whose result shape is given explicitly in HLO rather than
derived (parameter, constant, iota, convert, bitcast-convert, broadcast, reshape, rng,
rng-bit-generator, custom-call, ...). `check_explicit_shape` checks those for consistency.
Errors raise `HloShapeError` naming the opcode and the operand shapes.
"""

from __future__ import annotations

from minijax.compiler.hlo import opcodes
from minijax.compiler.hlo.ir import Shape

# Opcode sets, from the opcode table (hlo/opcodes.py).
UNARY_OPCODES = opcodes.select(arity=1, shape_rule="elementwise")
BINARY_OPCODES = opcodes.select(arity=2, shape_rule="elementwise") - {"compare"}
ELEMENTWISE_OPCODES = opcodes.select(shape_rule="elementwise")
EXPLICIT_SHAPE_OPCODES = opcodes.select(shape_rule="explicit") | opcodes.UNSUPPORTED
_COMPLEX_PART = {"c64": "f32", "c128": "f64"}
_PART_COMPLEX = {"f32": "c64", "f64": "c128"}


class HloShapeError(ValueError):
    """An instruction's operands or attributes do not fit together."""


def _fmt(s: Shape) -> str:
    if s.is_tuple:
        return "(" + ", ".join(_fmt(t) for t in s.tuple_shapes) + ")"
    return f"{s.element_type}[{','.join(map(str, s.dims))}]"


def _fail(opcode: str, shapes, message: str):
    raise HloShapeError(f"{opcode}: {message} (operand shapes: "
                        f"{', '.join(_fmt(s) for s in shapes) or 'none'})")


def same_shape(a: Shape, b: Shape) -> bool:
    """Equal element types, dims and tuple structure, ignoring layouts."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(same_shape(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
    return a.element_type == b.element_type and tuple(a.dims) == tuple(b.dims)


def _arr(et: str, dims) -> Shape:
    return Shape(et, tuple(int(d) for d in dims))


def _maybe_tuple(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else Shape.tuple(shapes)


def _root_shape(opcode, shapes, called, key) -> Shape:
    comp = called.get(key) if called else None
    if comp is None or comp.root is None:
        _fail(opcode, shapes, f"needs a called computation {key}=")
    return _strip(comp.root.shape)


def _strip(s: Shape) -> Shape:
    if s.is_tuple:
        return Shape.tuple([_strip(t) for t in s.tuple_shapes])
    return Shape(s.element_type, tuple(s.dims))


def _window_dims(opcode, shapes, dims, window) -> list[int]:
    size = tuple(window.get("size", ()))
    rank = len(dims)
    if len(size) != rank:
        _fail(opcode, shapes, f"window has {len(size)} dimensions, operand has {rank}")
    stride = window.get("stride") or (1,) * rank
    pad = window.get("pad") or ((0, 0),) * rank
    lhs_d = window.get("lhs_dilate") or (1,) * rank
    rhs_d = window.get("rhs_dilate") or (1,) * rank
    out = []
    for i in range(rank):
        if size[i] < 1 or stride[i] < 1 or lhs_d[i] < 1 or rhs_d[i] < 1:
            _fail(opcode, shapes, f"bad window in dimension {i}: {window}")
        n = dims[i]
        padded = (max(n - 1, 0) * lhs_d[i] + (1 if n else 0)) + pad[i][0] + pad[i][1]
        win = (size[i] - 1) * rhs_d[i] + 1
        out.append(0 if padded < win else (padded - win) // stride[i] + 1)
    return out


def _infer_elementwise(opcode, shapes, attrs, called) -> Shape:
    if opcode in UNARY_OPCODES:
        if len(shapes) != 1:
            _fail(opcode, shapes, "expects 1 operand")
        (x,) = shapes
        if opcode in ("real", "imag") or (opcode == "abs" and x.element_type in _COMPLEX_PART):
            return _arr(_COMPLEX_PART.get(x.element_type, x.element_type), x.dims)
        if opcode == "is-finite":
            return _arr("pred", x.dims)
        if opcode in ("optimization-barrier", "copy") and x.is_tuple:
            return _strip(x)
        return _arr(x.element_type, x.dims)
    if opcode in BINARY_OPCODES or opcode == "compare":
        if len(shapes) != 2:
            _fail(opcode, shapes, "expects 2 operands")
        a, b = shapes
        if a.dims != b.dims:
            _fail(opcode, shapes, "operand dimensions differ")
        if a.element_type != b.element_type:
            _fail(opcode, shapes, "operand element types differ")
        if opcode == "compare":
            if attrs.get("direction") not in ("EQ", "NE", "LT", "LE", "GT", "GE"):
                _fail(opcode, shapes, f"bad direction {attrs.get('direction')!r}")
            return _arr("pred", a.dims)
        if opcode == "complex":
            if a.element_type not in _PART_COMPLEX:
                _fail(opcode, shapes, "operands must be f32 or f64")
            return _arr(_PART_COMPLEX[a.element_type], a.dims)
        return _arr(a.element_type, a.dims)
    if opcode == "select":
        if len(shapes) != 3:
            _fail(opcode, shapes, "expects 3 operands")
        p, a, b = shapes
        if p.element_type != "pred":
            _fail(opcode, shapes, "predicate must be pred")
        if not same_shape(a, b):
            _fail(opcode, shapes, "on_true and on_false shapes differ")
        if p.dims != a.dims and p.dims != ():
            _fail(opcode, shapes, "predicate dimensions differ from the operands'")
        return _strip(a)
    if opcode == "clamp":
        if len(shapes) != 3:
            _fail(opcode, shapes, "expects 3 operands")
        lo, x, hi = shapes
        for b in (lo, hi):
            if b.element_type != x.element_type or (b.dims != x.dims and b.dims != ()):
                _fail(opcode, shapes, "min/max must be scalars or match the operand")
        return _arr(x.element_type, x.dims)
    if opcode == "map":
        if not shapes or any(s.dims != shapes[0].dims for s in shapes):
            _fail(opcode, shapes, "operands must have equal dimensions")
        root = _root_shape(opcode, shapes, called, "to_apply")
        return _arr(root.element_type, shapes[0].dims)
    raise AssertionError(opcode)


def _perm_ok(perm, rank) -> bool:
    return sorted(perm) == list(range(rank))


def _infer_shape_ops(opcode, shapes, attrs, called) -> Shape:
    x = shapes[0] if shapes else None
    if opcode == "transpose":
        perm = tuple(attrs.get("dimensions", ()))
        if not _perm_ok(perm, x.rank):
            _fail(opcode, shapes, f"dimensions={list(perm)} is not a permutation")
        return _arr(x.element_type, [x.dims[p] for p in perm])
    if opcode == "reverse":
        if any(not 0 <= d < x.rank for d in attrs.get("dimensions", ())):
            _fail(opcode, shapes, "dimension out of range")
        return _arr(x.element_type, x.dims)
    if opcode == "slice":
        sl = attrs.get("slice", ())
        if len(sl) != x.rank:
            _fail(opcode, shapes, f"slice has {len(sl)} entries for rank {x.rank}")
        dims = []
        for n, s in zip(x.dims, sl):
            start, limit = s[0], s[1]
            stride = s[2] if len(s) > 2 else 1
            if not (0 <= start <= limit <= n) or stride < 1:
                _fail(opcode, shapes, f"bad slice [{start}:{limit}:{stride}] of size {n}")
            dims.append(-(-(limit - start) // stride))
        return _arr(x.element_type, dims)
    if opcode == "dynamic-slice":
        sizes = tuple(attrs.get("dynamic_slice_sizes", ()))
        if len(sizes) != x.rank or any(s < 0 or s > n for s, n in zip(sizes, x.dims)):
            _fail(opcode, shapes, f"bad dynamic_slice_sizes={list(sizes)}")
        _check_indices(opcode, shapes, shapes[1:], x.rank)
        return _arr(x.element_type, sizes)
    if opcode == "dynamic-update-slice":
        upd = shapes[1]
        if upd.rank != x.rank or any(u > n for u, n in zip(upd.dims, x.dims)):
            _fail(opcode, shapes, "update does not fit in the operand")
        if upd.element_type != x.element_type:
            _fail(opcode, shapes, "update element type differs")
        _check_indices(opcode, shapes, shapes[2:], x.rank)
        return _arr(x.element_type, x.dims)
    if opcode == "concatenate":
        d = (tuple(attrs.get("dimensions", ())) or (None,))[0]
        if d is None or not 0 <= d < x.rank:
            _fail(opcode, shapes, f"bad concatenate dimension {d}")
        total = 0
        for s in shapes:
            if (s.rank != x.rank or s.element_type != x.element_type or
                    any(a != b for i, (a, b) in enumerate(zip(s.dims, x.dims)) if i != d)):
                _fail(opcode, shapes, "operands differ outside the concatenate dimension")
            total += s.dims[d]
        return _arr(x.element_type, x.dims[:d] + (total,) + x.dims[d + 1:])
    if opcode == "pad":
        pads = attrs.get("padding", ())
        if len(shapes) != 2 or shapes[1].rank != 0 or len(pads) != x.rank:
            _fail(opcode, shapes, "expects operand, scalar padding value and one "
                                  "lo_hi_interior per dimension")
        dims = []
        for n, p in zip(x.dims, pads):
            lo, hi, it = (tuple(p) + (0,))[:3]
            if it < 0:
                _fail(opcode, shapes, "negative interior padding")
            dims.append(lo + hi + n + max(n - 1, 0) * it)
            if dims[-1] < 0:
                _fail(opcode, shapes, "negative padded size")
        return _arr(x.element_type, dims)
    raise AssertionError(opcode)


def _check_indices(opcode, shapes, idx, rank):
    if len(idx) == 1 and idx[0].rank == 1 and rank != 1:
        return  # old form: one rank-1 index vector
    if len(idx) != rank or any(s.rank != 0 for s in idx):
        _fail(opcode, shapes, f"needs {rank} scalar start indices")


def _infer_reduce(opcode, shapes, attrs, called) -> Shape:
    n = len(shapes) // 2
    if len(shapes) != 2 * n or n == 0:
        _fail(opcode, shapes, "expects N operands followed by N init values")
    ops, inits = shapes[:n], shapes[n:]
    if any(s.dims != ops[0].dims for s in ops):
        _fail(opcode, shapes, "operands must have equal dimensions")
    if any(s.rank != 0 for s in inits):
        _fail(opcode, shapes, "init values must be scalars")
    if opcode == "reduce":
        dims = tuple(attrs.get("dimensions", ()))
        if len(set(dims)) != len(dims) or any(not 0 <= d < ops[0].rank for d in dims):
            _fail(opcode, shapes, f"bad dimensions={list(dims)}")
        out = [d for i, d in enumerate(ops[0].dims) if i not in dims]
    else:
        out = _window_dims(opcode, shapes, ops[0].dims, attrs.get("window", {}))
    if called and called.get("to_apply") is not None:
        root = called["to_apply"].root.shape
        leaves = root.tuple_shapes if root.is_tuple else (root,)
        if len(leaves) != n or any(r.rank != 0 for r in leaves):
            _fail(opcode, shapes, f"reducer must return {n} scalar(s), returns {_fmt(root)}")
    return _maybe_tuple([_arr(i.element_type, out) for i in inits])


def _infer_dot(opcode, shapes, attrs, called) -> Shape:
    if len(shapes) != 2:
        _fail(opcode, shapes, "expects 2 operands")
    lhs, rhs = shapes
    lb, rb = tuple(attrs.get("lhs_batch_dims", ())), tuple(attrs.get("rhs_batch_dims", ()))
    lc = tuple(attrs.get("lhs_contracting_dims", ()))
    rc = tuple(attrs.get("rhs_contracting_dims", ()))
    if len(lb) != len(rb) or len(lc) != len(rc):
        _fail(opcode, shapes, "batch/contracting dimension counts differ between lhs and rhs")
    for dims, s in ((lb + lc, lhs), (rb + rc, rhs)):
        if len(set(dims)) != len(dims) or any(not 0 <= d < s.rank for d in dims):
            _fail(opcode, shapes, "batch/contracting dimensions are out of range or repeated")
    for a, b in zip(lb + lc, rb + rc):
        if lhs.dims[a] != rhs.dims[b]:
            _fail(opcode, shapes, f"lhs dimension {a} ({lhs.dims[a]}) != rhs dimension "
                                  f"{b} ({rhs.dims[b]})")
    out = [lhs.dims[d] for d in lb]
    out += [n for i, n in enumerate(lhs.dims) if i not in lb and i not in lc]
    out += [n for i, n in enumerate(rhs.dims) if i not in rb and i not in rc]
    return _arr(lhs.element_type, out)


def parse_dim_labels(labels: str):
    """`b01f_01io->b01f` -> (lhs, rhs, out) label strings."""
    try:
        inputs, out = labels.split("->")
        lhs, rhs = inputs.split("_")
    except ValueError:
        raise HloShapeError(f"convolution: bad dim_labels {labels!r}") from None
    return lhs, rhs, out


def _infer_convolution(opcode, shapes, attrs, called) -> Shape:
    if len(shapes) != 2:
        _fail(opcode, shapes, "expects 2 operands")
    lhs, rhs = shapes
    ll, rl, ol = parse_dim_labels(attrs.get("dim_labels", ""))
    if len(ll) != lhs.rank or len(rl) != rhs.rank or len(ol) != lhs.rank:
        _fail(opcode, shapes, f"dim_labels {attrs.get('dim_labels')} do not match the ranks")
    nsp = lhs.rank - 2
    fgc = attrs.get("feature_group_count") or 1
    bgc = attrs.get("batch_group_count") or 1
    try:
        batch = lhs.dims[ll.index("b")]
        feat = lhs.dims[ll.index("f")]
        kin = rhs.dims[rl.index("i")]
        kout = rhs.dims[rl.index("o")]
        lsp = [lhs.dims[ll.index(str(i))] for i in range(nsp)]
        rsp = [rhs.dims[rl.index(str(i))] for i in range(nsp)]
    except ValueError:
        _fail(opcode, shapes, f"dim_labels {attrs.get('dim_labels')} miss a dimension")
    if feat != kin * fgc:
        _fail(opcode, shapes, f"input features {feat} != kernel input features {kin} * "
                              f"feature_group_count {fgc}")
    window = attrs.get("window", {})
    if tuple(window.get("size", ())) != tuple(rsp):
        _fail(opcode, shapes, f"window size {window.get('size')} != kernel spatial {rsp}")
    osp = _window_dims(opcode, shapes, lsp, window)
    if batch % bgc:
        _fail(opcode, shapes, "batch is not divisible by batch_group_count")
    out = [0] * lhs.rank
    out[ol.index("b")] = batch // bgc
    out[ol.index("f")] = kout
    for i in range(nsp):
        out[ol.index(str(i))] = osp[i]
    return _arr(lhs.element_type, out)


def _infer_gather(opcode, shapes, attrs, called) -> Shape:
    if len(shapes) != 2:
        _fail(opcode, shapes, "expects operand and start indices")
    operand, idx = shapes
    ivd = attrs.get("index_vector_dim", idx.rank)
    offset_dims = tuple(attrs.get("offset_dims", ()))
    collapsed = set(attrs.get("collapsed_slice_dims", ()))
    obatch = set(attrs.get("operand_batching_dims", ()))
    sizes = tuple(attrs.get("slice_sizes", ()))
    if len(sizes) != operand.rank:
        _fail(opcode, shapes, f"slice_sizes has {len(sizes)} entries for rank {operand.rank}")
    if any(s > n for s, n in zip(sizes, operand.dims)):
        _fail(opcode, shapes, "slice_sizes exceed the operand")
    batch = [n for i, n in enumerate(idx.dims) if i != ivd]
    offsets = [s for i, s in enumerate(sizes) if i not in collapsed and i not in obatch]
    if len(offsets) != len(offset_dims):
        _fail(opcode, shapes, f"offset_dims has {len(offset_dims)} entries, expected "
                              f"{len(offsets)}")
    rank = len(batch) + len(offsets)
    out = []
    bi = oi = 0
    for i in range(rank):
        if i in offset_dims:
            out.append(offsets[oi])
            oi += 1
        else:
            if bi >= len(batch):
                _fail(opcode, shapes, "offset_dims out of range")
            out.append(batch[bi])
            bi += 1
    return _arr(operand.element_type, out)


def _infer_control(opcode, shapes, attrs, called) -> Shape:
    if opcode == "tuple":
        return Shape.tuple([_strip(s) for s in shapes])
    if opcode == "get-tuple-element":
        i = attrs.get("index", -1)
        if not shapes[0].is_tuple or not 0 <= i < len(shapes[0].tuple_shapes):
            _fail(opcode, shapes, f"index={i} is out of range")
        return _strip(shapes[0].tuple_shapes[i])
    if opcode in ("call", "fusion"):
        return _root_shape(opcode, shapes, called, "to_apply" if opcode == "call" else "calls")
    if opcode == "while":
        body = _root_shape(opcode, shapes, called, "body")
        if len(shapes) != 1 or not same_shape(body, shapes[0]):
            _fail(opcode, shapes, f"body returns {_fmt(body)}, the loop state differs")
        cond = _root_shape(opcode, shapes, called, "condition")
        if cond.element_type != "pred" or cond.rank != 0:
            _fail(opcode, shapes, "condition must return pred[]")
        return body
    if opcode == "conditional":
        if "branch_computations" in (called or {}):
            branches = called["branch_computations"]
        else:
            branches = [called.get("true_computation"), called.get("false_computation")]
        if not branches or any(b is None for b in branches):
            _fail(opcode, shapes, "needs branch computations")
        outs = [_strip(b.root.shape) for b in branches]
        if any(not same_shape(o, outs[0]) for o in outs):
            _fail(opcode, shapes, "branches return different shapes")
        return outs[0]
    if opcode in ("sort", "scatter"):
        n = len(shapes) if opcode == "sort" else (len(shapes) - 1) // 2
        ops = shapes[:n]
        if opcode == "scatter" and len(shapes) != 2 * n + 1:
            _fail(opcode, shapes, "expects N operands, indices, N updates")
        if any(s.dims != ops[0].dims for s in ops):
            _fail(opcode, shapes, "operands must have equal dimensions")
        return _maybe_tuple([_strip(s) for s in ops])
    if opcode == "select-and-scatter":
        if len(shapes) != 3:
            _fail(opcode, shapes, "expects operand, source and init value")
        out = _window_dims(opcode, shapes, shapes[0].dims, attrs.get("window", {}))
        if tuple(out) != shapes[1].dims:
            _fail(opcode, shapes, f"source dims must be the windowed dims {out}")
        return _strip(shapes[0])
    if opcode == "after-all":
        return Shape("token")
    raise AssertionError(opcode)


def _infer_batch_norm(opcode, shapes, attrs, called) -> Shape:
    """batch-norm-training (x, scale, offset) -> (y, mean, var); batch-norm-inference
    (x, scale, offset, mean, var) -> y; batch-norm-grad (x, scale, mean, var, dy) ->
    (dx, dscale, doffset). Per-feature operands are rank 1 of the feature dimension."""
    arity = {"batch-norm-training": 3, "batch-norm-inference": 5, "batch-norm-grad": 5}
    if len(shapes) != arity[opcode]:
        _fail(opcode, shapes, f"expects {arity[opcode]} operands")
    x = shapes[0]
    if x.element_type not in ("f16", "bf16", "f32", "f64"):
        _fail(opcode, shapes, "the operand must be floating point")
    f = attrs.get("feature_index")
    if not isinstance(f, int) or not 0 <= f < x.rank:
        _fail(opcode, shapes, f"feature_index={f} is out of range for rank {x.rank}")
    feature = _arr(x.element_type, (x.dims[f],))
    per_feature = shapes[1:] if opcode != "batch-norm-grad" else shapes[1:4]
    for s in per_feature:
        if not same_shape(s, feature):
            _fail(opcode, shapes, f"per-feature operands must be {_fmt(feature)}")
    if opcode == "batch-norm-grad" and not same_shape(shapes[4], x):
        _fail(opcode, shapes, "grad_output must have the operand's shape")
    if opcode == "batch-norm-inference":
        return _strip(x)
    return Shape.tuple([_strip(x), feature, feature])


def _infer_fft(opcode, shapes, attrs, called) -> Shape:
    """FFT/IFFT: complex -> same; RFFT: real -> complex with the last dim n // 2 + 1;
    IRFFT: complex -> real with the last dims fft_length."""
    if len(shapes) != 1:
        _fail(opcode, shapes, "expects 1 operand")
    x = shapes[0]
    kind = attrs.get("fft_type", "FFT")
    length = tuple(attrs.get("fft_length", ()))
    n = len(length)
    if not 1 <= n <= 3 or n > x.rank:
        _fail(opcode, shapes, f"fft_length={list(length)} must have 1 to 3 entries, at most "
                              "the operand's rank")
    inner = x.dims[x.rank - n:]
    if kind in ("FFT", "IFFT"):
        if x.element_type not in _COMPLEX_PART:
            _fail(opcode, shapes, f"{kind} needs a complex operand")
        if inner != length:
            _fail(opcode, shapes, f"fft_length={list(length)} differs from the inner dims")
        return _strip(x)
    if kind == "RFFT":
        if x.element_type not in _PART_COMPLEX:
            _fail(opcode, shapes, "RFFT needs an f32 or f64 operand")
        if inner != length:
            _fail(opcode, shapes, f"fft_length={list(length)} differs from the inner dims")
        dims = x.dims[:-1] + ((length[-1] // 2 + 1) if length[-1] else 0,)
        return _arr(_PART_COMPLEX[x.element_type], dims)
    if kind == "IRFFT":
        if x.element_type not in _COMPLEX_PART:
            _fail(opcode, shapes, "IRFFT needs a complex operand")
        want = length[:-1] + ((length[-1] // 2 + 1) if length[-1] else 0,)
        if inner != want:
            _fail(opcode, shapes, f"inner dims must be {list(want)} for "
                                  f"fft_length={list(length)}")
        return _arr(_COMPLEX_PART[x.element_type], x.dims[:x.rank - n] + length)
    _fail(opcode, shapes, f"unknown fft_type={kind}")


def _infer_operands(opcode, shapes, attrs, called) -> Shape:
    """Result shaped like the operand(s): one array, or a tuple of several (all-reduce,
    collective-permute, cholesky, add-dependency's first operand)."""
    if opcode == "add-dependency":
        return _strip(shapes[0])
    if opcode == "triangular-solve":
        a, b = shapes
        if a.rank < 2 or a.dims[-1] != a.dims[-2] or a.element_type != b.element_type:
            _fail(opcode, shapes, "a must be a batch of square matrices of b's type")
        return _strip(b)
    if opcode == "cholesky" and (shapes[0].rank < 2 or shapes[0].dims[-1] != shapes[0].dims[-2]):
        _fail(opcode, shapes, "expects a batch of square matrices")
    return _maybe_tuple([_strip(s) for s in shapes])


def _infer_topk(opcode, shapes, attrs, called) -> Shape:
    """topk(x[..., n]), k= -> (values[..., k], s32 indices[..., k])."""
    (x,) = shapes
    k = int(attrs.get("k", -1))
    if x.rank < 1 or not 0 <= k <= x.dims[-1]:
        _fail(opcode, shapes, f"k={k} must be in [0, {x.dims[-1] if x.rank else 0}]")
    dims = x.dims[:-1] + (k,)
    return Shape.tuple([_arr(x.element_type, dims), _arr("s32", dims)])


#: Shape rules by the name the opcode table gives them.
SHAPE_RULES = {
    "elementwise": _infer_elementwise, "shape-ops": _infer_shape_ops,
    "reduce": _infer_reduce, "control": _infer_control, "dot": _infer_dot,
    "convolution": _infer_convolution, "gather": _infer_gather,
    "batch-norm": _infer_batch_norm, "fft": _infer_fft, "topk": _infer_topk,
    "operands": _infer_operands, "first-operand": _infer_operands,
    "second-operand": _infer_operands,
}
_RULES = {op.name: SHAPE_RULES[op.shape_rule] for op in opcodes.OPCODES.values()
          if op.shape_rule != "explicit"}


def infer_shape(opcode: str, operand_shapes, attrs=None, called=None) -> Shape | None:
    """The result shape of `opcode` on operands of `operand_shapes`, or None when HLO gives
    it explicitly (see EXPLICIT_SHAPE_OPCODES) or the opcode is unknown.

    `attrs` are the instruction's attributes (ir.py conventions) and `called` its called
    computations (`{"to_apply": comp, ...}`). Raises HloShapeError on inconsistent input.
    """
    rule = _RULES.get(opcode)
    if rule is None:
        return None
    shapes = list(operand_shapes)
    if (opcode not in ("tuple", "after-all", "get-tuple-element", "while", "conditional",
                       "call", "fusion", "optimization-barrier", "copy")
            and any(s.is_tuple for s in shapes)):
        _fail(opcode, shapes, "operands must be arrays, not tuples")
    if not shapes and opcode not in ("tuple", "after-all", "call", "fusion"):
        _fail(opcode, shapes, "expects operands")
    try:
        return rule(opcode, shapes, attrs or {}, called or {})
    except (IndexError, KeyError, TypeError) as e:
        _fail(opcode, shapes, f"bad attributes {attrs}: {e}")


def check_explicit_shape(opcode: str, shape: Shape, operand_shapes, attrs=None,
                         literal=None) -> None:
    """Check an explicitly given result shape against operands/attributes (broadcast,
    reshape, convert, bitcast-convert, iota, constant). Raises HloShapeError."""
    attrs = attrs or {}
    shapes = list(operand_shapes)
    if opcode == "broadcast":
        dims = tuple(attrs.get("dimensions", ()))
        x = shapes[0]
        if len(dims) != x.rank or any(not 0 <= d < shape.rank for d in dims):
            _fail(opcode, shapes, f"dimensions={list(dims)} do not fit result {_fmt(shape)}")
        if any(x.dims[i] != shape.dims[d] for i, d in enumerate(dims)):
            _fail(opcode, shapes, f"operand does not broadcast to {_fmt(shape)}")
        if x.element_type != shape.element_type:
            _fail(opcode, shapes, "broadcast changes the element type")
    elif opcode == "reshape":
        if shapes[0].size != shape.size or shapes[0].element_type != shape.element_type:
            _fail(opcode, shapes, f"cannot reshape to {_fmt(shape)}")
    elif opcode == "convert":
        if shapes[0].dims != shape.dims:
            _fail(opcode, shapes, f"convert changes dimensions to {_fmt(shape)}")
    elif opcode == "bitcast-convert":
        a, b = shapes[0], shape
        if a.dtype.itemsize == b.dtype.itemsize and a.dims != b.dims:
            _fail(opcode, shapes, f"bitcast-convert to {_fmt(shape)} changes dimensions")
    elif opcode == "stochastic-convert":
        if len(shapes) != 2:
            _fail(opcode, shapes, "expects an operand and random bits")
        x, r = shapes
        if x.dims != r.dims or x.dims != shape.dims:
            _fail(opcode, shapes, f"operand, random bits and result {_fmt(shape)} must have "
                                  "equal dimensions")
        if not r.element_type.startswith("u") or r.dtype.itemsize != x.dtype.itemsize:
            _fail(opcode, shapes, "random bits must be unsigned, as wide as the operand")
        if shape.element_type[0] != "s" or x.element_type[0] not in "fb":
            _fail(opcode, shapes, f"converts floats to signed integers, not to {_fmt(shape)}")
    elif opcode == "iota":
        d = attrs.get("iota_dimension", 0)
        if shape.rank == 0 or not 0 <= d < shape.rank:
            _fail(opcode, shapes, f"iota_dimension={d} out of range for {_fmt(shape)}")
    elif opcode == "constant" and literal is not None:
        if tuple(literal.shape) != tuple(shape.dims):
            _fail(opcode, shapes, f"literal of shape {literal.shape} in {_fmt(shape)}")
