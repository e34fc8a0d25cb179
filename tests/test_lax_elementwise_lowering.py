"""Lowering of the lax elementwise primitives: each op of the op table is lowered to HLO
and run by the HLO reference evaluator, and compared with eager execution."""

from __future__ import annotations

import numpy as np
import pytest
from test_lax_elementwise import OPS, make_args

from minijax import lax
from minijax.test_util import evaluate_lowered

pytestmark = pytest.mark.usefixtures("x64")





def _lowering_tol(op, dtype):
    dtype = np.dtype(dtype)
    # Composite lowerings (asin via atan2, lgamma via Lanczos, ...) agree with the NumPy
    # implementations to a few ulps of the working precision.
    base = {2: 4e-3, 4: 2e-5, 8: 1e-11, 16: 1e-11}
    return base[dtype.itemsize if dtype.kind == "f" else dtype.itemsize // 2] * op.rtol




@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_lowering_matches_eager(op):
    pytest.importorskip("minijax.compiler.lower")
    rng = np.random.default_rng(0)
    for dtype in op.dtypes:
        if np.dtype(dtype) == np.float16 and op.name in ("erf_inv", "lgamma", "digamma"):
            continue
        args = make_args(op, rng, (7,), dtype)
        want = np.asarray(op.fn(*args))
        (got,) = evaluate_lowered(op.fn, *args)
        assert got.dtype == want.dtype and got.shape == want.shape
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want, err_msg=f"{op.name} {dtype}")
        else:
            tol = _lowering_tol(op, want.dtype)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol,
                                       err_msg=f"{op.name} {dtype} {args}")


BINARY_OPS = [op for op in OPS if op.nargs == 2]


@pytest.mark.parametrize("op", BINARY_OPS, ids=[op.name for op in BINARY_OPS])
def test_lowering_with_scalar_operand(op):
    pytest.importorskip("minijax.compiler.lower")
    rng = np.random.default_rng(1)
    for dtype in op.dtypes[-2:]:
        for scalar_arg in (0, 1):
            args = make_args(op, rng, (2, 3), dtype, scalar_arg)
            want = np.asarray(op.fn(*args))
            (got,) = evaluate_lowered(op.fn, *args)
            assert got.shape == want.shape == (2, 3)
            tol = 0 if want.dtype.kind in "biu" else _lowering_tol(op, want.dtype)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=op.name)


def test_lowering_select_n_clamp_bitcast():
    pytest.importorskip("minijax.compiler.lower")
    cases = [np.float32([1, 2, 3, 4]), np.float32([5, 6, 7, 8]), np.float32([9, 10, 11, 12])]
    for which in (np.int32([0, 1, 2, 5]), np.int32([-1, 2, 1, 0]), np.int32(1)):
        fn = lambda w, a, b, c: lax.select_n(w, a, b, c)  # noqa: E731
        (got,) = evaluate_lowered(fn, which, *cases)
        np.testing.assert_array_equal(got, fn(which, *cases))
    fn = lambda p, a, b: lax.select_n(p, a, b)  # noqa: E731
    pred = np.array([True, False, True, False])
    (got,) = evaluate_lowered(fn, pred, *cases[:2])
    np.testing.assert_array_equal(got, fn(pred, *cases[:2]))
    fn = lambda lo, x, hi: lax.clamp(lo, x, hi)  # noqa: E731
    args = [np.float32(2), cases[0], np.float32([3, 3, 3, 3.5])]
    (got,) = evaluate_lowered(fn, *args)
    np.testing.assert_array_equal(got, fn(*args))
    for new in (np.uint8, np.int32):
        fn = lambda x: lax.bitcast_convert_type(x, new)  # noqa: E731, B023
        (got,) = evaluate_lowered(fn, cases[0])
        np.testing.assert_array_equal(got, fn(cases[0]))
    narrow = np.arange(8, dtype=np.uint16).reshape(4, 2)
    fn = lambda x: lax.bitcast_convert_type(x, np.float32)  # noqa: E731
    (got,) = evaluate_lowered(fn, narrow)
    np.testing.assert_array_equal(got.view(np.uint32), np.asarray(fn(narrow)).view(np.uint32))


def test_bitwise_ops_on_bool_are_logical():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal(lax.bitwise_and(a, b), a & b)
    np.testing.assert_array_equal(lax.bitwise_or(a, b), a | b)
    np.testing.assert_array_equal(lax.bitwise_xor(a, b), a ^ b)
    np.testing.assert_array_equal(lax.bitwise_not(a), ~a)
    assert lax.bitwise_not(a).dtype == np.bool_
    np.testing.assert_array_equal(lax.max(a, b), a | b)
    np.testing.assert_array_equal(lax.lt(a, b), a < b)
    pytest.importorskip("minijax.compiler.lower")
    for fn in (lax.bitwise_and, lax.bitwise_or, lax.bitwise_xor, lax.lt):
        (got,) = evaluate_lowered(fn, a, b)
        np.testing.assert_array_equal(got, fn(a, b))
    (got,) = evaluate_lowered(lax.bitwise_not, a)
    np.testing.assert_array_equal(got, ~a)
