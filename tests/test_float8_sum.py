"""float8 sums, means and dots match JAX's values bit for bit: XLA sums float8 arrays with a
float8 accumulator (float16 adds rounded back to float8 at every step) in the order of its
tree-reduction rewrite (windows of 32), and dots accumulate in float32 (minijax.lax.float8_sum).
Expected values: JAX 0.10.2 on CPU, hard-coded."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

NAN = float("nan")
LINSPACE_SIZES = {"sum_linspace": (7, 33, 40, 65, 100, 1000, 5000),
                  "mean_linspace": (7, 40, 100, 1000), "dot_linspace": (7, 40, 100)}


def _arr(shape):
    return np.random.RandomState(0).uniform(-2, 2, shape).astype(np.float32)


def _lin(n):
    return np.linspace(0, 3, n, dtype=np.float32)


CASES = {
    "sum_linspace": lambda x8: [jnp.sum(x8(_lin(n))) for n in LINSPACE_SIZES["sum_linspace"]],
    "mean_linspace": lambda x8: [jnp.mean(x8(_lin(n)))
                                 for n in LINSPACE_SIZES["mean_linspace"]],
    "dot_linspace": lambda x8: [jnp.dot(x8(_lin(n)), x8(_lin(n)))
                                for n in LINSPACE_SIZES["dot_linspace"]],
    "sum_3d_axes12": lambda x8: jnp.sum(x8(_arr((3, 40, 50))), (1, 2)),
    "sum_3d_axis1": lambda x8: jnp.sum(x8(_arr((3, 40, 50))), 1)[:, :6],
    "sum_3d_all": lambda x8: jnp.sum(x8(_arr((3, 40, 50)))),
    "sum_tall_all": lambda x8: jnp.sum(x8(np.abs(_arr((2000, 3))))),
    "sum_tall_axis0": lambda x8: jnp.sum(x8(np.abs(_arr((2000, 3)))), 0),
}

# JAX 0.10.2's results (float8 values, printed as floats)
JAX_VALUES = {
    ('float8_e4m3fn', 'sum_linspace'): [10.0, 48.0, 64.0, 88.0, 144.0, NAN, NAN],
    ('float8_e4m3fn', 'mean_linspace'): [1.375, 1.625, 1.5, NAN],
    ('float8_e4m3fn', 'dot_linspace'): [22.0, 120.0, 288.0],
    ('float8_e4m3fn', 'sum_3d_axes12'): [9.0, -36.0, -56.0],
    ('float8_e4m3fn', 'sum_3d_axis1'):
        [-0.5, 7.5, -6.5, -1.0, 5.0, 0.5, 0.5, 1.375, 8.0,
         -6.5, 13.0, -9.0, -4.0, -0.9375, -7.0, -2.0, -10.0, -6.0],
    ('float8_e4m3fn', 'sum_3d_all'): [-64.0],
    ('float8_e4m3fn', 'sum_tall_all'): [NAN],
    ('float8_e4m3fn', 'sum_tall_axis0'): [NAN, NAN, NAN],
    ('float8_e5m2', 'sum_linspace'): [12.0, 48.0, 48.0, 56.0, 80.0, 256.0, 768.0],
    ('float8_e5m2', 'mean_linspace'): [1.75, 1.25, 0.875, 0.25],
    ('float8_e5m2', 'dot_linspace'): [24.0, 128.0, 320.0],
    ('float8_e5m2', 'sum_3d_axes12'): [0.0, -28.0, -28.0],
    ('float8_e5m2', 'sum_3d_axis1'):
        [0.0, 7.0, -6.0, -4.0, 7.0, 2.0, -1.5, 2.5, 8.0,
         -6.0, 14.0, -6.0, -5.0, -0.75, -3.0, -1.5, -10.0, -7.0],
    ('float8_e5m2', 'sum_3d_all'): [-28.0],
    ('float8_e5m2', 'sum_tall_all'): [256.0],
    ('float8_e5m2', 'sum_tall_axis0'): [256.0, 256.0, 256.0],
}


def _run(dtype_name, case):
    dtype = getattr(jnp, dtype_name)
    out = CASES[case](lambda a: jnp.asarray(a).astype(dtype))
    if isinstance(out, list):
        assert all(o.dtype == dtype for o in out)
        return np.array([float(o) for o in out], np.float32)
    assert out.dtype == dtype
    return np.asarray(out, np.float32).ravel()


@pytest.mark.parametrize("dtype_name, case", sorted(JAX_VALUES))
def test_matches_jax_bitwise(dtype_name, case):
    np.testing.assert_array_equal(_run(dtype_name, case), JAX_VALUES[dtype_name, case])


@pytest.mark.parametrize("dtype_name", ["float8_e4m3fn", "float8_e5m2"])
def test_jit_sum_matches_eager_and_jax(dtype_name):
    dtype = getattr(jnp, dtype_name)
    jitted_sum = minijax.jit(lambda a: jnp.sum(a))
    for i, n in enumerate(LINSPACE_SIZES["sum_linspace"]):
        got = jitted_sum(jnp.asarray(_lin(n)).astype(dtype))
        np.testing.assert_array_equal(np.float32(got),
                                      JAX_VALUES[dtype_name, "sum_linspace"][i])
    got = minijax.jit(lambda a: jnp.sum(a, (1, 2)))(jnp.asarray(_arr((3, 40, 50))).astype(dtype))
    np.testing.assert_array_equal(np.asarray(got, np.float32),
                                  JAX_VALUES[dtype_name, "sum_3d_axes12"])


def test_accumulator_is_float8_not_float32():
    # 40 values whose float32 sum (60.06) rounds to 60 in e4m3fn; JAX's float8 accumulator
    # gives 64
    x = jnp.asarray(_lin(40)).astype(jnp.float8_e4m3fn)
    assert float(np.asarray(x, np.float32).sum()) != 64.0 and float(jnp.sum(x)) == 64.0


def test_grad_of_float8_sum_is_ones():
    x = jnp.asarray(_lin(40)).astype(jnp.float8_e5m2)
    g = minijax.grad(lambda v: jnp.sum(v).astype(jnp.float32))(x)
    assert g.dtype == jnp.float8_e5m2
    np.testing.assert_array_equal(np.asarray(g, np.float32), np.ones(40, np.float32))
