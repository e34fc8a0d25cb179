"""lax elementwise primitives under transformations: JVP/VJP against finite differences
(order 2 where twice differentiable), vmap against a Python loop with random in_axes and
out_axes, and the special derivative conventions (max/min ties, pow at 0, select_n, clamp,
complex parts). The op table comes from test_lax_elementwise.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lax_elementwise import DOMAINS, OPS

import minijax
from minijax import lax
from minijax.test_util import check_grads, check_vmap

pytestmark = pytest.mark.usefixtures("x64")


# Smooth sample points (no edges, away from kinks and poles) for finite differences.
_GRAD_SAMPLERS = {
    "any": lambda r, s: r.standard_normal(s) * 1.5,
    "small": lambda r, s: r.standard_normal(s),
    "pos": lambda r, s: r.uniform(0.3, 3.0, s),
    "open_unit": lambda r, s: r.uniform(-0.85, 0.85, s),
    "ge1_open": lambda r, s: r.uniform(1.3, 5.0, s),
    "gamma_smooth": lambda r, s: r.choice([-2.7, -1.4, -0.6, 0.4, 1.7, 3.3, 7.2], s)
    + r.uniform(-0.1, 0.1, s),
}

GRAD_OPS = [op for op in OPS if op.grad and np.float64 in op.dtypes]


def _grad_args(op, rng, shape, dtype=np.float64):
    return [_GRAD_SAMPLERS[d](rng, shape).astype(dtype) for d in (op.grad_domain or op.domain)]


@pytest.mark.parametrize("op", GRAD_OPS, ids=[op.name for op in GRAD_OPS])
def test_check_grads_float64(op):
    rng = np.random.default_rng(0)
    fn = op.fn
    if op.name == "complex":
        # test_util.check_vjp pairs cotangents without JAX's conjugation convention, so
        # complex outputs are checked through their real and imaginary parts.
        def fn(*args):
            z = op.fn(*args)
            return lax.real(z), lax.imag(z)
    for shape in [(), (3,)]:
        args = _grad_args(op, rng, shape)
        check_grads(fn, args, order=op.order, modes=("fwd", "rev"), eps=1e-5, atol=1e-5,
                    rtol=1e-5)


COMPLEX_GRAD_OPS = [op for op in GRAD_OPS if np.complex128 in op.dtypes
                    and op.name not in ("real", "imag", "abs")]


@pytest.mark.parametrize("op", COMPLEX_GRAD_OPS, ids=[op.name for op in COMPLEX_GRAD_OPS])
def test_jvp_complex128(op):
    rng = np.random.default_rng(1)
    args = [(_GRAD_SAMPLERS[d](rng, (3,)) + 0.3j * _GRAD_SAMPLERS[d](rng, (3,)))
            .astype(np.complex128) for d in (op.grad_domain or op.domain)]
    check_grads(op.fn, args, order=1, modes=("fwd",), eps=1e-6, atol=1e-5, rtol=1e-5)


def test_lgamma_second_derivative_is_trigamma():
    x = np.array([0.3, 1.0, 2.5, 10.0, -1.5])
    g2 = minijax.vmap(minijax.grad(minijax.grad(lax.lgamma)))(x)
    from minijax.lax import special_math
    np.testing.assert_allclose(g2, special_math.trigamma(x), rtol=1e-12)


# --------------------------------------------------------------------------- vmap


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_vmap_matches_loop(op, data):
    dtype = np.dtype(data.draw(st.sampled_from(op.dtypes), label="dtype"))
    rank = data.draw(st.integers(0, 2), label="rank")
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    batch = data.draw(st.integers(1, 3), label="batch")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    in_axes, args = [], []
    for i, dom in enumerate(op.domain):
        # Some operands of n-ary ops are rank-0 (lax broadcasts scalars).
        scalar = op.nargs > 1 and i > 0 and data.draw(st.booleans(), label=f"scalar{i}")
        arg_shape = () if scalar else shape
        axis = data.draw(st.sampled_from([None] + list(range(-len(arg_shape) - 1,
                                                              len(arg_shape) + 1))),
                         label=f"axis{i}")
        if i == 0 and axis is None:
            axis = 0
        value = DOMAINS[dom](rng, arg_shape if axis is None else
                             (batch,) + arg_shape, dtype)
        if axis is not None:
            value = np.moveaxis(value, 0, axis)
        in_axes.append(axis)
        args.append(value)
    out_axes = data.draw(st.integers(0, len(shape)), label="out_axes")
    check_vmap(op.fn, args, tuple(in_axes), out_axes, atol=0, rtol=0)


def test_vmap_select_n_batched_selector_with_scalar_cases():
    which = np.array([0, 2, 1], np.int32)
    cases = [np.float32(1), np.float32(2), np.float32(3)]
    check_vmap(lambda w, a, b, c: lax.select_n(w, a, b, c), [which] + cases,
               (0, None, None, None), 0)
    check_vmap(lambda w, a, b: lax.select_n(w, a, b), [np.int32(1), np.ones((2, 3)),
                                                        np.zeros((3, 2))], (None, 1, 0), 1)
    check_vmap(lambda w, a, b: lax.select_n(w, a, b),
               [np.array([True, False]), np.ones((3,)), np.zeros((2, 3))], (0, None, 0), 0)


def test_vmap_clamp_mixed_batching():
    lo = np.array([-1.0, 0.0, 0.5])
    x = np.linspace(-2, 2, 4)
    check_vmap(lambda lo, x, hi: lax.clamp(lo, x, hi), [lo, np.float64(0.25), 1.0],
               (0, None, None), 0)
    check_vmap(lambda lo, x, hi: lax.clamp(lo, x, hi), [lo, x, np.float64(1.0)],
               (0, None, None), 1)
    check_vmap(lambda lo, x, hi: lax.clamp(lo, x, hi), [np.float64(-0.5),
                                                        np.stack([x, -x], 1), 1.0],
               (None, 1, None), 0)


def test_vmap_bitcast_convert_type():
    x = np.arange(12, dtype=np.int32).reshape(3, 4).astype(np.float32)
    for axis in (0, 1):
        check_vmap(lambda v: lax.bitcast_convert_type(v, np.uint8), [x], axis, 0)
    narrow = np.arange(30, dtype=np.uint16).reshape(3, 5, 2)  # batch of (5, 2) -> f32[5]
    for axis in (0, 1, 2):
        check_vmap(lambda v: lax.bitcast_convert_type(v, np.float32),
                   [np.moveaxis(narrow, 0, axis)], axis, 0)


# --------------------------------------------------------------------------- derivative rules


def test_max_min_split_ties_half_half():
    assert float(minijax.grad(lambda x: lax.max(x, 1.0))(1.0)) == 0.5
    assert float(minijax.grad(lambda x: lax.min(x, 1.0))(1.0)) == 0.5
    assert float(minijax.grad(lambda x: lax.max(x, 1.0))(2.0)) == 1.0
    assert float(minijax.grad(lambda x: lax.max(x, 1.0))(0.0)) == 0.0
    gx, gy = minijax.grad(lambda x, y: lax.min(x, y), argnums=(0, 1))(3.0, 3.0)
    assert float(gx) == float(gy) == 0.5


def test_pow_derivatives_at_zero():
    d = minijax.grad(lambda x: lax.pow(x, 2.0))(0.0)
    assert float(d) == 0.0
    d0 = minijax.grad(lambda x: lax.pow(x, 0.0))(0.0)
    assert float(d0) == 0.0
    dy = minijax.grad(lambda y: lax.pow(0.0, y))(2.0)
    assert float(dy) == 0.0
    d_half = minijax.grad(lambda x: lax.pow(x, 0.5))(0.0)
    assert float(d_half) == np.inf
    # integer exponent: derivative with respect to x only
    gi = minijax.grad(lambda x: lax.pow(x, np.int32(3)))(2.0)
    assert float(gi) == 12.0


def test_integer_pow_zero_and_negative():
    assert float(minijax.grad(lambda x: lax.integer_pow(x, 0))(3.0)) == 0.0
    np.testing.assert_allclose(minijax.grad(lambda x: lax.integer_pow(x, -2))(2.0), -0.25)
    np.testing.assert_allclose(minijax.grad(lax.reciprocal)(4.0), -1 / 16)


def test_select_n_grads():
    which = np.array([0, 2, 1, 2], np.int32)
    a, b, c = (np.random.default_rng(i).standard_normal(4) for i in range(3))
    check_grads(lambda a, b, c: lax.select_n(which, a, b, c), [a, b, c], order=2)
    mask = np.array([True, False, False, True])
    check_grads(lambda a, b: lax.select(mask, a, b), [a, b], order=2)
    check_grads(lambda a, b: lax.select_n(np.int32(1), a, b), [a, b], order=1)
    g = minijax.grad(lambda a: lax.reduce_sum(lax.select_n(which, a, b, c), (0,)))(a)
    np.testing.assert_array_equal(g, [1, 0, 0, 0])


def test_clamp_grads():
    x = np.array([-2.0, -0.5, 0.3, 1.7, 3.0])
    check_grads(lambda lo, x, hi: lax.clamp(lo, x, hi), [np.full(5, -1.0), x, np.full(5, 1.0)],
                order=2)
    check_grads(lambda lo, x: lax.clamp(lo, x, 1.0), [np.float64(-1.0), x], order=1)
    g = minijax.grad(lambda x: lax.reduce_sum(lax.clamp(-1.0, x, 1.0), (0,)))(x)
    np.testing.assert_array_equal(g, [0, 1, 1, 0, 0])


def test_rem_grads():
    check_grads(lax.rem, [np.array([5.3, -7.1]), np.array([2.0, 3.0])], order=2)
    check_grads(lambda x: lax.rem(x, np.array([2.0, 3.0])), [np.float64(5.3)], order=1)


def test_complex_parts_grads():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(3), rng.standard_normal(3)

    def f(x, y):
        z = lax.complex(x, y)
        w = lax.mul(lax.conj(z), lax.complex(y, lax.mul(x, x)))
        return lax.add(lax.real(w), lax.mul(lax.imag(w), lax.imag(z)))
    check_grads(f, [x, y], order=2)
    check_grads(lambda x: lax.real(lax.conj(x)), [x], order=1)
    check_grads(lambda x, y: lax.abs(lax.complex(x, y)), [x, y], order=2)
    np.testing.assert_allclose(minijax.grad(lambda a: lax.abs(lax.complex(a, 4.0)))(3.0), 0.6)


def test_reduce_precision_is_linear():
    x = np.array([1.0, 2.5, -3.25])
    check_grads(lambda x: lax.reduce_precision(x, 8, 23), [x], order=1, atol=1e-3, rtol=1e-3)


def test_zero_jvps_of_piecewise_constant_ops():
    x = np.array([-1.5, 0.3, 2.0])
    for f in (lax.floor, lax.ceil, lax.round, lax.sign):
        _, t = minijax.jvp(f, (x,), (np.ones(3),))
        np.testing.assert_array_equal(t, 0)
    g = minijax.grad(lambda x: lax.reduce_sum(
        lax.select(lax.lt(x, 0.0), lax.neg(x), x), (0,)))(x)
    np.testing.assert_array_equal(g, [-1, 1, 1])


def test_nextafter_has_no_derivative():
    with pytest.raises(NotImplementedError, match="nextafter"):
        minijax.grad(lambda x: lax.nextafter(x, 2.0))(1.0)
