"""Out-of-bound indexing follows JAX, not NumPy (JAX 0.10.2's values, hard-coded).

Reads clamp (x[11] on 10 elements is the last element; negative indices wrap once, then
clamp), `.at[i].get(mode="fill")` fills, out-of-bound `.at[i].set/add/...` updates are
dropped, `mode=` works as in JAX ("promise_in_bounds", "clip", "drop", "fill"), jnp.take and
take_along_axis take JAX's modes (take's "clip" does not wrap negative indices; take_along_axis
with "promise_in_bounds" does not either). Gradients: an index-array gather drops out-of-bound
indices in its transpose, a static or traced scalar index clamps (dynamic_slice), take's
"clip" accumulates at the clamped position. Each case runs eagerly and under jit; with real
JAX importable the hard-coded values are checked against it.
"""

import math

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import lax as mlax

nan = math.nan
X_SOURCE = 'jnp.arange(10.)'

# (name, function of x, JAX's result)
CASES = [
    ('static_index_past_end',
     'lambda x: x[11]',
     9.0),
    ('static_index_before_start',
     'lambda x: x[-11]',
     0.0),
    ('static_index_far_before_start',
     'lambda x: x[-12]',
     0.0),
    ('index_array',
     'lambda x: x[jnp.array([11, -11, -1, 3, 100])]',
     [9.0, 0.0, 9.0, 3.0, 9.0]),
    ('index_arrays_2d',
     'lambda x: x.reshape(2, 5)[jnp.array([3, -3]), jnp.array([7, -9])]',
     [9.0, 0.0]),
    ('static_index_2d_with_slice',
     'lambda x: x.reshape(2, 5)[5, 1:3]',
     [6.0, 7.0]),
    ('get_fill',
     "lambda x: x.at[jnp.array([11, -11, -1, 3])].get(mode='fill', fill_value=-5.)",
     [-5.0, -5.0, 9.0, 3.0]),
    ('get_fill_default_nan',
     "lambda x: x.at[jnp.array([11, -11, -1, 3])].get(mode='fill')",
     [nan, nan, 9.0, 3.0]),
    ('get_fill_static',
     "lambda x: x.at[11].get(mode='fill', fill_value=-5.)",
     -5.0),
    ('get_fill_static_with_slice',
     "lambda x: x.reshape(5, 2).at[7, :].get(mode='fill', fill_value=-1.)",
     [-1.0, -1.0]),
    ('get_clip',
     "lambda x: x.at[jnp.array([11, -11, -1, 3])].get(mode='clip')",
     [9.0, 0.0, 9.0, 3.0]),
    ('get_clip_static',
     "lambda x: x.at[-17].get(mode='clip')",
     0.0),
    ('get_promise_in_bounds',
     "lambda x: x.at[jnp.array([11, -1, 3])].get(mode='promise_in_bounds')",
     [9.0, 9.0, 3.0]),
    ('get_drop',
     "lambda x: x.at[jnp.array([11, -1, 3])].get(mode='drop')",
     [nan, 9.0, 3.0]),
    ('set_static_out_of_bounds',
     'lambda x: x.at[11].set(5.)',
     [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('set_static_negative_out_of_bounds',
     'lambda x: x.at[-11].add(5.)',
     [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('set_array_out_of_bounds',
     'lambda x: x.at[jnp.array([11, -11, -1, 3])].set(5.)',
     [0.0, 1.0, 2.0, 5.0, 4.0, 5.0, 6.0, 7.0, 8.0, 5.0]),
    ('add_array_out_of_bounds',
     'lambda x: x.at[jnp.array([11, -11, -1, 3, 3])].add(5.)',
     [0.0, 1.0, 2.0, 13.0, 4.0, 5.0, 6.0, 7.0, 8.0, 14.0]),
    ('mul_out_of_bounds',
     'lambda x: x.at[jnp.array([11, 2])].mul(5.)',
     [0.0, 1.0, 10.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('min_out_of_bounds',
     'lambda x: x.at[jnp.array([11, 2])].min(-5.)',
     [0.0, 1.0, -5.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('set_clip',
     "lambda x: x.at[jnp.array([11, -11])].set(5., mode='clip')",
     [5.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 5.0]),
    ('set_drop',
     "lambda x: x.at[jnp.array([11, -11, 2])].set(5., mode='drop')",
     [0.0, 1.0, 5.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('set_fill',
     "lambda x: x.at[jnp.array([11, 2])].set(5., mode='fill')",
     [0.0, 1.0, 5.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('set_2d_out_of_bounds',
     'lambda x: x.reshape(5, 2).at[7, 0].add(1.)',
     [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0], [8.0, 9.0]]),
    ('take_default_fill',
     'lambda x: jnp.take(x, jnp.array([11, -11, -1, 3]))',
     [nan, nan, 9.0, 3.0]),
    ('take_fill_value',
     "lambda x: jnp.take(x, jnp.array([11, -11, -1, 3]), mode='fill', fill_value=7.)",
     [7.0, 7.0, 9.0, 3.0]),
    ('take_clip_no_negative_wrap',
     "lambda x: jnp.take(x, jnp.array([11, -11, -1, 3]), mode='clip')",
     [9.0, 0.0, 0.0, 3.0]),
    ('take_wrap',
     "lambda x: jnp.take(x, jnp.array([11, -11, -1, 3]), mode='wrap')",
     [1.0, 9.0, 9.0, 3.0]),
    ('take_int_fill',
     'lambda x: jnp.take(x.astype(jnp.int32), jnp.array([11, -11]))',
     [-2147483648, -2147483648]),
    ('take_bool_fill',
     'lambda x: jnp.take(x > 3, jnp.array([11, -11]))',
     [True, True]),
    ('take_axis',
     'lambda x: jnp.take(x.reshape(2, 5), jnp.array([7, -6]), axis=1)',
     [[nan, nan], [nan, nan]]),
    ('take_along_axis_default',
     'lambda x: jnp.take_along_axis(x.reshape(2, 5), jnp.array([[7, -6], [1, 2]]), axis=1)',
     [[nan, nan], [6.0, 7.0]]),
    ('take_along_axis_fill',
     "lambda x: jnp.take_along_axis(x.reshape(2, 5), jnp.array([[7, -6], [1, 2]]), axis=1,"
     " mode='fill', fill_value=9.)",
     [[9.0, 9.0], [6.0, 7.0]]),
    ('take_along_axis_clip',
     "lambda x: jnp.take_along_axis(x.reshape(2, 5), jnp.array([[7, -6], [1, 2]]), axis=1,"
     " mode='clip')",
     [[4.0, 0.0], [6.0, 7.0]]),
    ('take_along_axis_promise_no_wrap',
     "lambda x: jnp.take_along_axis(x, jnp.array([17, -1]), 0, mode='promise_in_bounds')",
     [9.0, 0.0]),
    ('unsigned_index',
     'lambda x: x[jnp.array([11, 3], dtype=jnp.uint32)]',
     [9.0, 3.0]),
    ('dynamic_slice_clamps',
     'lambda x: lax.dynamic_slice(x, (8,), (4,))',
     [6.0, 7.0, 8.0, 9.0]),
    ('dynamic_update_slice_clamps',
     'lambda x: lax.dynamic_update_slice(x, jnp.ones(3), (9,))',
     [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1.0, 1.0, 1.0]),
    ('vmap_index',
     'lambda x: jax.vmap(lambda i: x[i])(jnp.array([11, -11, 2]))',
     [9.0, 0.0, 2.0]),
    ('vmap_set',
     'lambda x: jax.vmap(lambda i: x.at[i].set(-1.))(jnp.array([11, 2]))',
     [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
      [0.0, 1.0, -1.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]]),
    ('grad_index_array_drops',
     'lambda x: jax.grad(lambda x: jnp.sum(x[jnp.array([11, -11, 2])]))(x)',
     [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
    ('grad_static_index_clamps',
     'lambda x: jax.grad(lambda x: x[11])(x)',
     [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
    ('grad_set_out_of_bounds',
     'lambda x: jax.grad(lambda x: jnp.sum(x.at[jnp.array([11, 2])].set(0.) * 2.))(x)',
     [2.0, 2.0, 0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]),
    ('grad_add_updates_out_of_bounds',
     'lambda x: jax.grad(lambda y: jnp.sum(x.at[jnp.array([11, 2])].add(y) * 3.))(2.)',
     3.0),
    ('grad_take_clip_accumulates',
     "lambda x: jax.grad(lambda x: jnp.sum(jnp.take(x, jnp.array([11, 2]), mode='clip')))(x)",
     [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
    ('grad_take_along_axis_drops',
     'lambda x: jax.grad(lambda x: jnp.sum(jnp.take_along_axis(x, jnp.array([11, 2]), axis=0)))(x)',
     [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
]
# (name, function of (x, i) with a traced index i, i, JAX's result)
TRACED = [
    ('traced_index', 'lambda x, i: x[i]', 11, 9.0),
    ('traced_negative_index', 'lambda x, i: x[i]', -12, 0.0),
    ('traced_set',
     'lambda x, i: x.at[i].set(-1.)', 11, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('traced_set_negative',
     'lambda x, i: x.at[i].set(-1.)', -11, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ('traced_get_fill', "lambda x, i: x.at[i].get(mode='fill', fill_value=-1.)", 13, -1.0),
]


def _env(jax, jnp, lax):
    return {"jax": jax, "jnp": jnp, "lax": lax, "np": np}


def _check(name, got, want):
    got = np.asarray(got)
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(want, np.float64),
                                  err_msg=name)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_out_of_bounds_indexing_matches_jax(case, jit):
    name, fsrc, want = case
    env = _env(minijax, mjnp, mlax)
    fn = eval(fsrc, env)
    x = eval(X_SOURCE, env)
    _check(name, (minijax.jit(fn) if jit else fn)(x), want)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("case", TRACED, ids=[c[0] for c in TRACED])
def test_scalar_index_matches_jax(case, jit):
    name, fsrc, i, want = case
    fn = eval(fsrc, _env(minijax, mjnp, mlax))
    x = mjnp.arange(10.)
    _check(name, (minijax.jit(fn) if jit else fn)(x, i), want)


def test_fill_values_and_dtypes():
    x = mjnp.arange(4)
    # JAX's default fills: NaN for floats, the minimum for signed and maximum for unsigned
    # integers, True for booleans.
    assert np.asarray(mjnp.take(x, mjnp.array([9]))).tolist() == [np.iinfo(np.int32).min]
    u = mjnp.arange(4, dtype=mjnp.uint8)
    assert np.asarray(mjnp.take(u, mjnp.array([9]))).tolist() == [255]
    assert np.asarray(mjnp.take(x > 1, mjnp.array([9]))).tolist() == [True]
    assert mjnp.take(u, mjnp.array([9])).dtype == np.uint8


def test_invalid_modes_raise_like_jax():
    x = mjnp.arange(4.)
    for mode in ("promise_in_bounds", "drop", "raise_please"):
        with pytest.raises(ValueError, match="Invalid mode"):
            mjnp.take(x, mjnp.array([1]), mode=mode)
    with pytest.raises(NotImplementedError):
        mjnp.take(x, mjnp.array([1]), mode="raise")
    with pytest.raises(ValueError):
        x.at[mjnp.array([1])].get(mode="wrap")


def test_values_are_jax_values():
    jax = pytest.importorskip("jax")
    import jax.numpy as jjnp
    from jax import lax as jlax
    env = _env(jax, jjnp, jlax)
    with jax.default_device(jax.devices("cpu")[0]):
        x = eval(X_SOURCE, env)
        for name, fsrc, want in CASES:
            _check(name, eval(fsrc, env)(x), want)
        for name, fsrc, i, want in TRACED:
            _check(name, jax.jit(eval(fsrc, env))(x, i), want)


@pytest.mark.parametrize("mode", [None, "fill", "clip", "promise_in_bounds"])
@pytest.mark.parametrize("arr_shape, idx_shape, axis, dtype", [
    ((0, 3), (0, 3), 0, np.float32), ((2, 0), (2, 3), 1, np.float32),
    ((2, 0), (2, 3), 1, np.int32), ((0, 3), (0, 2), 1, np.float32)])
def test_take_along_axis_of_empty_array(arr_shape, idx_shape, axis, dtype, mode):
    """Found by tests/test_differential_jit.py: take_along_axis of an array with a 0-size dim
    raised a gather slice_sizes error. JAX 0.10.2: the output shape, all zeros (even where
    mode "fill" would give NaN for out-of-bounds reads)."""
    arr = np.zeros(arr_shape, dtype)
    idx = np.zeros(idx_shape, np.int32)
    out_shape = tuple(idx_shape[d] if d == axis else max(arr_shape[d], idx_shape[d])
                      for d in range(2))

    def f(a, i):
        return mjnp.take_along_axis(a, i, axis=axis, mode=mode)
    for run in (f, minijax.jit(f)):
        got = np.asarray(run(arr, idx))
        assert got.shape == out_shape and got.dtype == dtype
        np.testing.assert_array_equal(got, np.zeros(out_shape, dtype))
