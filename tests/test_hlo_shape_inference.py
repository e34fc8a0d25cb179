"""HLO shape inference (XLA's rules) and the builder/verifier that rely on it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minijax.compiler.hlo.builder import HloBuilder, scalar_computation
from minijax.compiler.hlo.ir import Computation, Module, Shape
from minijax.compiler.hlo.shape_inference import (
    HloShapeError,
    check_explicit_shape,
    infer_shape,
)
from minijax.compiler.hlo.verifier import verify_module


def S(et, *dims):
    return Shape(et, tuple(dims))


def _comp_returning(shape: Shape, nparams=2, param_shape=None) -> Computation:
    comp = Computation("c")
    b = HloBuilder(comp)
    ps = [b.parameter(i, param_shape or S(shape.element_type)) for i in range(nparams)]
    if shape.is_tuple:
        b.set_root(b.tuple([b.constant(np.zeros(s.dims, s.dtype), s.element_type)
                            for s in shape.tuple_shapes]))
    else:
        b.set_root(b.constant(np.zeros(shape.dims, shape.dtype), shape.element_type))
    del ps
    return comp


F4 = S("f32", 4)


@pytest.mark.parametrize("opcode,shapes,attrs,expected", [
    ("add", [F4, F4], {}, F4),
    ("exponential", [S("f32", 2, 3)], {}, S("f32", 2, 3)),
    ("abs", [S("c64", 3)], {}, S("f32", 3)),
    ("real", [S("c128", 3)], {}, S("f64", 3)),
    ("is-finite", [F4], {}, S("pred", 4)),
    ("complex", [F4, F4], {}, S("c64", 4)),
    ("compare", [F4, F4], {"direction": "LT"}, S("pred", 4)),
    ("select", [S("pred", 4), F4, F4], {}, F4),
    ("select", [S("pred"), F4, F4], {}, F4),
    ("clamp", [S("f32"), F4, S("f32")], {}, F4),
    ("transpose", [S("f32", 2, 3, 4)], {"dimensions": (2, 0, 1)}, S("f32", 4, 2, 3)),
    ("reverse", [S("f32", 2, 3)], {"dimensions": (1,)}, S("f32", 2, 3)),
    ("slice", [S("f32", 10, 5)], {"slice": ((1, 10, 3), (0, 5, 1))}, S("f32", 3, 5)),
    ("dynamic-slice", [S("f32", 8, 8), S("s32"), S("s32")], {"dynamic_slice_sizes": (2, 3)},
     S("f32", 2, 3)),
    ("dynamic-update-slice", [S("f32", 8, 8), S("f32", 2, 3), S("s32"), S("s32")], {},
     S("f32", 8, 8)),
    ("concatenate", [S("f32", 2, 3), S("f32", 2, 5)], {"dimensions": (1,)}, S("f32", 2, 8)),
    ("pad", [S("f32", 3, 4), S("f32")], {"padding": ((1, 2, 0), (0, 0, 1))}, S("f32", 6, 7)),
    ("pad", [S("f32", 5), S("f32")], {"padding": ((-1, -2, 0),)}, S("f32", 2)),
    ("reduce", [S("f32", 2, 3, 4), S("f32")], {"dimensions": (0, 2)}, S("f32", 3)),
    ("reduce", [S("f32", 2, 3), S("s32", 2, 3), S("f32"), S("s32")], {"dimensions": (1,)},
     Shape.tuple([S("f32", 2), S("s32", 2)])),
    ("reduce-window", [S("f32", 4, 6), S("f32")],
     {"window": {"size": (2, 3), "stride": (2, 1), "pad": ((0, 0), (1, 1))}}, S("f32", 2, 6)),
    ("reduce-window", [S("f32", 5), S("f32")],
     {"window": {"size": (3,), "lhs_dilate": (2,), "rhs_dilate": (2,)}}, S("f32", 5)),
    ("dot", [S("f32", 3, 4), S("f32", 4, 5)],
     {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, S("f32", 3, 5)),
    ("dot", [S("f32", 2, 3, 4), S("f32", 2, 5, 4)],
     {"lhs_batch_dims": (0,), "rhs_batch_dims": (0,), "lhs_contracting_dims": (2,),
      "rhs_contracting_dims": (2,)}, S("f32", 2, 3, 5)),
    ("dot", [S("f32", 4, 2, 7), S("f32", 7, 4, 3)],
     {"lhs_batch_dims": (0,), "rhs_batch_dims": (1,), "lhs_contracting_dims": (2,),
      "rhs_contracting_dims": (0,)}, S("f32", 4, 2, 3)),
    ("dot", [S("f32", 3), S("f32", 3)],
     {"lhs_contracting_dims": (0,), "rhs_contracting_dims": (0,)}, S("f32")),
    ("convolution", [S("f32", 1, 8, 8, 4), S("f32", 3, 3, 2, 6)],
     {"window": {"size": (3, 3), "stride": (2, 2), "pad": ((1, 1), (1, 1))},
      "dim_labels": "b01f_01io->b01f", "feature_group_count": 2}, S("f32", 1, 4, 4, 6)),
    ("convolution", [S("f32", 2, 3, 10), S("f32", 5, 3, 4)],
     {"window": {"size": (4,)}, "dim_labels": "bf0_oi0->bf0"}, S("f32", 2, 5, 7)),
    ("gather", [S("f32", 5, 3), S("s32", 4, 1)],
     {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
      "index_vector_dim": 1, "slice_sizes": (1, 3)}, S("f32", 4, 3)),
    ("gather", [S("f32", 5, 7), S("s32", 2, 3, 2)],
     {"offset_dims": (1, 3), "collapsed_slice_dims": (), "start_index_map": (0, 1),
      "index_vector_dim": 2, "slice_sizes": (2, 4)}, S("f32", 2, 2, 3, 4)),
    ("gather", [S("f32", 5), S("s32", 3)],
     {"offset_dims": (), "collapsed_slice_dims": (0,), "start_index_map": (0,),
      "index_vector_dim": 1, "slice_sizes": (1,)}, S("f32", 3)),
    ("scatter", [S("f32", 5, 3), S("s32", 4, 1), S("f32", 4, 3)],
     {"update_window_dims": (1,), "inserted_window_dims": (0,),
      "scatter_dims_to_operand_dims": (0,), "index_vector_dim": 1}, S("f32", 5, 3)),
    ("sort", [S("f32", 4), S("s32", 4)], {"dimensions": (0,)},
     Shape.tuple([S("f32", 4), S("s32", 4)])),
    ("sort", [F4], {"dimensions": (0,)}, F4),
    ("select-and-scatter", [S("f32", 4, 6), S("f32", 2, 3), S("f32")],
     {"window": {"size": (2, 2), "stride": (2, 2)}}, S("f32", 4, 6)),
    ("tuple", [F4, S("s32")], {}, Shape.tuple([F4, S("s32")])),
    ("get-tuple-element", [Shape.tuple([F4, S("s32")])], {"index": 1}, S("s32")),
    ("reduce-precision", [F4], {"exponent_bits": 5, "mantissa_bits": 2}, F4),
])
def test_infer_shape(opcode, shapes, attrs, expected):
    called = {}
    if opcode in ("reduce", "reduce-window", "scatter", "sort"):
        n = len(shapes) // 2 if opcode.startswith("reduce") else 1
        leaf = [s.element_type for s in shapes[-n:]] if opcode.startswith("reduce") else ["f32"]
        ret = S(leaf[0]) if len(leaf) == 1 else Shape.tuple([S(t) for t in leaf])
        called["to_apply"] = _comp_returning(ret, 2 * n)
    got = infer_shape(opcode, shapes, attrs, called)
    assert got == expected


def test_infer_shape_of_called_computations():
    body = _comp_returning(Shape.tuple([S("s32"), F4]), 1, Shape.tuple([S("s32"), F4]))
    cond = _comp_returning(S("pred"), 1, Shape.tuple([S("s32"), F4]))
    state = Shape.tuple([S("s32"), F4])
    assert infer_shape("while", [state], {}, {"condition": cond, "body": body}) == state
    br = _comp_returning(F4, 1, F4)
    assert infer_shape("conditional", [S("s32"), F4, F4], {},
                       {"branch_computations": [br, br]}) == F4
    assert infer_shape("conditional", [S("pred"), F4, F4], {},
                       {"true_computation": br, "false_computation": br}) == F4
    assert infer_shape("call", [F4], {}, {"to_apply": br}) == F4
    assert infer_shape("fusion", [F4], {"kind": "kLoop"}, {"calls": br}) == F4
    m = _comp_returning(S("s32"), 2)
    assert infer_shape("map", [F4, F4], {"dimensions": (0,)}, {"to_apply": m}) == S("s32", 4)


@pytest.mark.parametrize("opcode", ["parameter", "constant", "iota", "convert", "broadcast",
                                    "reshape", "bitcast-convert", "rng-bit-generator",
                                    "custom-call", "some-unknown-op"])
def test_explicit_shape_opcodes_return_none(opcode):
    assert infer_shape(opcode, [F4], {}, {}) is None


@pytest.mark.parametrize("opcode,shapes,attrs,fragment", [
    ("add", [F4, S("f32", 5)], {}, "operand dimensions differ"),
    ("add", [F4, S("s32", 4)], {}, "element types differ"),
    ("compare", [F4, F4], {"direction": "LESS"}, "bad direction"),
    ("select", [S("f32", 4), F4, F4], {}, "predicate must be pred"),
    ("transpose", [S("f32", 2, 3)], {"dimensions": (0, 0)}, "not a permutation"),
    ("slice", [S("f32", 4)], {"slice": ((0, 5, 1),)}, "bad slice"),
    ("concatenate", [S("f32", 2, 3), S("f32", 3, 3)], {"dimensions": (1,)},
     "differ outside the concatenate dimension"),
    ("reduce", [S("f32", 2, 3), S("f32")], {"dimensions": (2,)}, "bad dimensions"),
    ("reduce", [S("f32", 2, 3)], {"dimensions": (0,)}, "N init values"),
    ("dot", [S("f32", 3, 4), S("f32", 5, 6)],
     {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, "lhs dimension 1 (4)"),
    ("convolution", [S("f32", 1, 8, 8, 4), S("f32", 3, 3, 3, 6)],
     {"window": {"size": (3, 3)}, "dim_labels": "b01f_01io->b01f"}, "input features 4"),
    ("gather", [S("f32", 5, 3), S("s32", 4, 1)],
     {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,),
      "index_vector_dim": 1, "slice_sizes": (1,)}, "slice_sizes has 1 entries"),
    ("get-tuple-element", [Shape.tuple([F4])], {"index": 3}, "index=3 is out of range"),
    ("dynamic-slice", [S("f32", 8), S("s32")], {"dynamic_slice_sizes": (9,)},
     "bad dynamic_slice_sizes"),
    ("pad", [S("f32", 3), S("f32", 1)], {"padding": ((0, 0, 0),)}, "scalar padding value"),
])
def test_infer_shape_errors_name_opcode_and_shapes(opcode, shapes, attrs, fragment):
    with pytest.raises(HloShapeError) as info:
        infer_shape(opcode, shapes, attrs, {})
    msg = str(info.value)
    assert msg.startswith(f"{opcode}: ") and fragment in msg
    assert "operand shapes: " in msg and shapes[0].element_type in msg


def test_check_explicit_shape():
    check_explicit_shape("broadcast", S("f32", 2, 4), [F4], {"dimensions": (1,)})
    with pytest.raises(HloShapeError, match="broadcast"):
        check_explicit_shape("broadcast", S("f32", 4, 2), [F4], {"dimensions": (1,)})
    check_explicit_shape("reshape", S("f32", 2, 2), [F4], {})
    with pytest.raises(HloShapeError, match="cannot reshape"):
        check_explicit_shape("reshape", S("f32", 3), [F4], {})
    with pytest.raises(HloShapeError, match="iota_dimension=2"):
        check_explicit_shape("iota", S("s32", 3, 3), [], {"iota_dimension": 2})


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=0, max_size=4), st.data())
def test_dot_and_transpose_shapes_match_numpy(dims, data):
    perm = data.draw(st.permutations(range(len(dims))))
    x = np.zeros(dims, np.float32)
    assert infer_shape("transpose", [S("f32", *dims)], {"dimensions": tuple(perm)}) == \
        S("f32", *np.transpose(x, perm).shape)
    if dims:
        k = dims[-1]
        n = data.draw(st.integers(1, 4))
        got = infer_shape("dot", [S("f32", *dims), S("f32", k, n)],
                          {"lhs_contracting_dims": (len(dims) - 1,),
                           "rhs_contracting_dims": (0,)})
        assert got.dims == (x @ np.zeros((k, n), np.float32)).shape


def test_builder_builds_a_verified_module_with_metadata():
    add = scalar_computation("add", "add", "f32")
    comp = Computation("main")
    b = HloBuilder(comp)
    meta = dict(op_name="jit(f)/add", source_file="f.py", source_line=3)
    x = b.parameter(0, S("f32", 2, 3))
    y = b.exponential(x, metadata=meta)
    z = b.reduce([y, x], [b.constant(np.float32(0)), b.constant(np.float32(0))], (1,),
                 _pair_add())
    w = b.get_tuple_element(z, 0)
    v = b.dot(x, b.transpose(x, (1, 0)), (1,), (0,))
    c = b.compare(w, w, "LT")
    s = b.select(c, w, w)
    cv = b.convert(s, np.int32)
    g = b.gather(x, b.constant(np.array([[1], [0]], np.int32)), (1,), (0,), (0,), 1, (1, 3))
    sc = b.scatter(x, b.constant(np.array([[1]], np.int32)), b.constant(np.ones((1, 3),
                   np.float32)), add, (1,), (0,), (0,), 1)
    r = b.tuple([w, v, cv, g, sc, b.reduce(x, b.constant(np.float32(0)), (0, 1), add)])
    assert b.computation.root is r and y.metadata == meta
    module = Module("m", [add, z.called["to_apply"], comp], comp)
    verify_module(module)
    assert r.shape.tuple_shapes[1] == S("f32", 2, 2)
    assert cv.shape == S("s32", 2) and g.shape == S("f32", 2, 3)
    with pytest.raises(HloShapeError, match="add: operand dimensions differ"):
        b.add(x, w)


def _pair_add() -> Computation:
    comp = Computation("pair_add")
    b = HloBuilder(comp)
    a0, a1 = b.parameter(0, S("f32")), b.parameter(1, S("f32"))
    b0, b1 = b.parameter(2, S("f32")), b.parameter(3, S("f32"))
    b.set_root(b.tuple([b.add(a0, b0), b.add(a1, b1)]))
    return comp


def test_scalar_computation_comparator():
    comp = scalar_computation("lt", "compare-LT", "s32")
    assert comp.root.opcode == "compare" and comp.root.shape == S("pred")
    assert comp.root.attrs["direction"] == "LT"
    assert [p.parameter_number for p in comp.parameters] == [0, 1]
