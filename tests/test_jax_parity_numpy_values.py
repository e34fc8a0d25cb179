"""Silent wrong answers in minijax.numpy found by differential testing against JAX 0.10.2.

Each test pins JAX's value (hard-coded, noted as JAX's) or a NumPy / float64 reference, runs
eagerly and under jit, and, where real JAX is importable, also compares with it (CI has no
JAX, so those parts skip).
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

try:
    import jax as real_jax
    import jax.numpy as real_jnp
except Exception:  # pragma: no cover - CI has no JAX
    real_jax = real_jnp = None

needs_jax = pytest.mark.skipif(real_jax is None, reason="real JAX is not installed")

bf16 = ml_dtypes.bfloat16


def _both(f, *args):
    """f's results eagerly and under jit (the compiled CPU path)."""
    return f(*args), minijax.jit(f)(*args)


def _assert_same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype.kind == "V" else got,
                                  want.astype(np.float64) if want.dtype.kind == "V" else want)


# --------------------------------------------------------------------------- reciprocal


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.bool_])
def test_reciprocal_of_integers_is_float(dtype):
    x = np.array([1, 2, 0, 4], dtype) if dtype != np.bool_ else np.array([True, False])
    with np.errstate(divide="ignore"):
        want = (1.0 / x.astype(np.float32)).astype(np.float32)  # JAX: [1, .5, inf, .25], f32
        for got in _both(jnp.reciprocal, x):
            _assert_same(got, want)
    scalar = jnp.reciprocal(3)
    assert scalar.dtype == np.float32 and scalar.aval.weak_type  # JAX: 0.33333334, weak f32
    np.testing.assert_allclose(scalar, np.float32(1 / 3))


# --------------------------------------------------------------------------- shifts of bools


def test_shifts_promote_booleans_to_int32():
    t = np.array([True, True, False, False])
    u = np.array([True, False, True, False])
    # JAX's values: left_shift(t, u) = [2, 1, 0, 0] int32, right_shift(t, 1) = [0, 0, 0, 0]
    for got in _both(jnp.left_shift, t, u):
        _assert_same(got, np.array([2, 1, 0, 0], np.int32))
    for got in _both(lambda a: jnp.right_shift(a, 1), t):
        _assert_same(got, np.zeros(4, np.int32))
    assert int(jnp.left_shift(True, 2)) == 4


# --------------------------------------------------------------------------- round(decimals)


def test_float16_round_with_decimals_does_not_overflow():
    x = np.array([1.25, 123.456, 12345.0, 65504.0, -0.0, np.nan], np.float16)
    # JAX scales float16 in float32, so x * 10**decimals cannot overflow to inf.
    for decimals in (1, 2, 3):
        want = (np.round(x.astype(np.float32) * np.float32(10.0 ** decimals))
                / np.float32(10.0 ** decimals)).astype(np.float16)
        for got in _both(lambda a, d=decimals: jnp.round(a, d), x):
            _assert_same(got, want)
            assert np.signbit(np.asarray(got)[4])
    # JAX's value for decimals=3 (was [1.25, inf, inf, inf, -0, nan] in minijax)
    np.testing.assert_array_equal(np.asarray(jnp.round(x, 3))[:4],
                                  np.array([1.25, 123.44, 12344, 65504], np.float16))


@needs_jax
@given(st.lists(st.floats(-70000, 70000, width=32) | st.sampled_from([np.nan, np.inf, -0.0]),
                min_size=1, max_size=8),
       st.integers(-2, 4), st.sampled_from([np.float16, bf16]))
@settings(max_examples=30)
def test_16bit_round_matches_jax(values, decimals, dtype):
    with np.errstate(over="ignore"):
        x = np.array(values, np.float32).astype(dtype)
    want = np.asarray(real_jnp.round(x, decimals)).astype(np.float64)
    got = np.asarray(jnp.round(x, decimals)).astype(np.float64)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- bf16 -> int


_SPECIAL = np.array([np.nan, -1.0, 1e10, -1e10, 300, -300, 2.7, -2.7, np.inf, -np.inf],
                    np.float32)


@pytest.mark.parametrize("src", [bf16, np.float16, np.float32, ml_dtypes.float8_e4m3fn])
@pytest.mark.parametrize("dst", [np.int8, np.uint8, np.int32, np.uint32])
def test_float_to_int_convert_saturates_nan_to_zero(src, dst):
    """XLA's convert (what JAX gives, eagerly and under jit): truncate, saturate, NaN -> 0.
    bfloat16 and the 8-bit floats wrapped eagerly (NumPy's bare astype)."""
    with np.errstate(over="ignore"):
        x = _SPECIAL.astype(src)
    wide = np.trunc(x.astype(np.float64))
    info = np.iinfo(dst)
    want = np.clip(np.nan_to_num(wide, nan=0.0, posinf=info.max, neginf=info.min),
                   info.min, info.max).astype(dst)
    for got in _both(lambda a: jnp.asarray(a).astype(dst), x):
        _assert_same(got, want)
    # sum(dtype=) converts first: JAX's sum(bf16 [-1, nan, 2.5, -2.5], dtype=uint8) is 2
    y = np.array([-1.0, np.nan, 2.5, -2.5], src)
    assert int(jnp.sum(y, dtype=np.uint8)) == 2


# --------------------------------------------------------------------------- sort_complex


def test_sort_complex_sorts_the_last_axis():
    x = np.array([[3, 1, 2], [0, 5, -1]], np.float32)
    want = np.array([[1, 2, 3], [-1, 0, 5]], np.complex64)  # JAX's value (lax.sort's axis)
    for got in _both(jnp.sort_complex, x):
        _assert_same(got, want)


# --------------------------------------------------------------------------- unique bf16


def test_unique_of_bfloat16_places_nan_last():
    x = np.array([1, np.nan, -0.0, np.inf, -np.inf, 3, 1, np.nan], bf16)
    vals, inv, counts = jnp.unique(x, return_inverse=True, return_counts=True)
    # JAX's values
    want = np.array([-np.inf, -0.0, 1, 3, np.inf, np.nan])
    np.testing.assert_array_equal(np.asarray(vals).astype(np.float64), want)
    assert vals.dtype == bf16
    np.testing.assert_array_equal(inv, [2, 5, 1, 4, 0, 3, 2, 5])
    np.testing.assert_array_equal(counts, [1, 1, 2, 1, 1, 2])
    jitted = minijax.jit(lambda a: jnp.unique(a, size=6))(x)
    np.testing.assert_array_equal(np.asarray(jitted).astype(np.float64), want)


# --------------------------------------------------------------------------- var ddof >= n


@pytest.mark.parametrize("fn", [jnp.var, jnp.std, jnp.nanvar, jnp.nanstd])
def test_variance_without_degrees_of_freedom_is_nan(fn):
    x = np.arange(3.0, dtype=np.float32)
    for ddof in (3, 4, 7):  # JAX's value: nan (was inf, from a clamp of n - ddof to 0)
        for got in _both(lambda a, d=ddof: fn(a, ddof=d), x):
            assert got.dtype == np.float32 and np.isnan(got)
    for got in _both(lambda a: fn(a, ddof=2), x):  # n - ddof > 0 is unchanged
        np.testing.assert_allclose(got, np.var(x, ddof=2) ** (0.5 if "std" in fn.__name__ else 1))
    # per row: JAX's values [[2.], [nan]] (row 1 has 2 unmasked elements, ddof=2)
    mask = np.array([[1, 1, 1], [1, 0, 1]], bool)
    got = fn(np.arange(6.0, dtype=np.float32).reshape(2, 3), axis=1, ddof=2, where=mask,
             keepdims=True) if fn in (jnp.var, jnp.std) else None
    if got is not None:
        np.testing.assert_allclose(got, [[np.sqrt(2.0) if fn is jnp.std else 2.0], [np.nan]])


@needs_jax
@given(st.integers(0, 5), st.integers(0, 7), st.sampled_from([np.float32, np.int32, np.float16]))
@settings(max_examples=25)
def test_var_ddof_matches_jax(n, ddof, dtype):
    x = (np.arange(n * 2).reshape(2, n) % 5).astype(dtype)
    for axis in (None, 1):
        want = np.asarray(real_jnp.var(x, axis=axis, ddof=ddof))
        got = np.asarray(jnp.var(x, axis=axis, ddof=ddof))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-3)


# --------------------------------------------------------------------------- expm1(-0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, bf16])
def test_expm1_keeps_the_sign_of_zero_under_jit(dtype):
    x = np.array([-0.0, 0.0, -1e-3, 0.25], dtype)
    got = np.asarray(minijax.jit(jnp.expm1)(x))
    np.testing.assert_array_equal(np.signbit(got), [True, False, True, False])  # as JAX/NumPy
    np.testing.assert_allclose(got.astype(np.float64), np.expm1(x.astype(np.float64)),
                               rtol=1e-2 if dtype != np.float32 else 1e-6)


def test_expm1_float64_keeps_the_sign_of_zero_under_jit(x64):
    got = np.asarray(minijax.jit(jnp.expm1)(np.array([-0.0, 0.0, -1e-300])))
    np.testing.assert_array_equal(np.signbit(got), [True, False, True])


# --------------------------------------------------------------------------- convolve dtypes


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.bool_])
def test_convolve_and_correlate_of_integers_are_float(mode, dtype):
    a = np.array([4, 0, 1, -4, -2, 4]).astype(dtype)
    v = np.array([1, -1, 2]).astype(dtype)
    a64, v64 = a.astype(np.float64), v.astype(np.float64)
    for fn, ref in ((jnp.convolve, np.convolve), (jnp.correlate, np.correlate)):
        for got in _both(lambda x, y, f=fn: f(x, y, mode=mode), a, v):
            assert got.dtype == np.float32  # JAX: float32 (NumPy's convolution default)
            np.testing.assert_array_equal(got, ref(a64, v64, mode=mode))
    # with preferred_element_type the inputs keep their (promoted) integer type, as in JAX
    got = jnp.convolve(a.astype(np.int32), v.astype(np.int32), preferred_element_type=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.convolve(a64, v64).astype(np.int32))


def test_polymul_and_polyder_of_integers_are_float():
    x1, x2 = np.array([2, 1, 0]), np.array([0, 5, 0, 3])
    got = jnp.polymul(x1, x2)  # JAX's docstring value: [0., 10., 5., 6., 3., 0.] float32
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [0.0, 10.0, 5.0, 6.0, 3.0, 0.0])
    got = jnp.polyder(np.array([2, -5, 6, 0]), 2)  # JAX's value: [12., -10.] float32
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [12.0, -10.0])
    assert jnp.polyder(np.array([1, 2], np.int32), 0).dtype == np.float32


# --------------------------------------------------------------------------- signed zeros


@pytest.mark.parametrize("dtype", [np.float32, np.float16, bf16])
def test_max_min_reductions_give_xla_signed_zeros_eagerly(dtype):
    z = np.array([[-0.0, 0.0, -0.0], [0.0, 0.0, 0.0], [-0.0, -0.0, -0.0], [1.0, -0.0, 0.0]],
                 dtype)
    # XLA's (JAX's) max(-0, 0) is 0 and min(-0, 0) is -0 whatever the order; NumPy's np.max
    # returns whichever zero it meets first.
    for got in _both(lambda a: jnp.max(a, axis=1), z):
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), [False, False, True, False])
    for got in _both(lambda a: jnp.min(a, axis=1), z):
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), [True, False, True, True])
    assert not np.signbit(np.asarray(jnp.max(z[:3])))
    assert np.signbit(np.asarray(jnp.min(z)))


# --------------------------------------------------------------------------- quantile


def test_linear_quantile_between_equal_infinities_and_signed_zeros():
    x = np.array([1, np.inf, np.inf, np.inf], np.float32)
    z = np.array([-0.0] * 5 + [0.0] + [-0.0] * 3, np.float32)
    # JAX's values: lo * (1 - f) + hi * f (was nan: inf + (inf - inf) * f)
    for got in _both(lambda a: jnp.quantile(a, 0.5), x):
        assert got == np.inf
    for got in _both(lambda a: jnp.percentile(a, np.array([10.0, 90.0])), x):
        np.testing.assert_array_equal(got, [np.inf, np.inf])
    for got in _both(lambda a: jnp.quantile(a, 0.5), z):
        assert got == 0 and np.signbit(np.asarray(got))  # JAX: -0.0
    # median is the midpoint of the two middle values (JAX's method): median([inf]) = inf,
    # where linear interpolation gives inf * 1 + inf * 0 = nan
    for fn in (jnp.median, jnp.nanmedian):
        for got in _both(fn, np.array([np.inf], np.float32)):
            assert got == np.inf
        for got in _both(fn, np.array([1, np.inf, 3, -np.inf, np.inf, np.inf], np.float32)):
            assert got == np.inf
        for got in _both(fn, z):
            assert got == 0 and np.signbit(np.asarray(got))
    got = jnp.nanquantile(np.array([np.nan, -np.inf, -np.inf, 2], np.float32), 0.25)
    assert got == -np.inf


@needs_jax
@given(st.lists(st.sampled_from([np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, np.nan]), min_size=1,
                max_size=7), st.just(0.0) | st.floats(1e-6, 1))  # JAX flushes subnormal q
@settings(max_examples=40)
def test_quantile_and_max_match_jax_on_special_values(values, q):
    x = np.array(values, np.float32)
    for fn in (lambda L, a: L.quantile(a, q), lambda L, a: L.nanquantile(a, q),
               lambda L, a: L.max(a), lambda L, a: L.min(a), lambda L, a: L.median(a)):
        want = np.asarray(fn(real_jnp, x))
        got = np.asarray(fn(jnp, x))
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert np.signbit(got) == np.signbit(want) or np.isnan(want)


# --------------------------------------------------------------------------- nancum* dtype=


def test_nancumulative_replaces_nan_before_the_dtype_conversion():
    x = np.array([np.nan, 2.5, np.nan, -2.0], np.float32)
    # JAX's values: NaN -> 1 (or 0) first, then int8 (truncating): [1, 2, 1, -2] -> cumprod
    for got in _both(lambda a: jnp.nancumprod(a, dtype=np.int8), x):
        _assert_same(got, np.array([1, 2, 2, -4], np.int8))
    for got in _both(lambda a: jnp.nancumsum(a, dtype=np.int32), x):
        _assert_same(got, np.array([0, 2, 2, 0], np.int32))
    for got in _both(lambda a: jnp.nancumsum(a, dtype=np.float16), x):
        _assert_same(got, np.array([0, 2.5, 2.5, 0.5], np.float16))


# ------------------------------------------------------------- complex max / min / ptp
_COMPLEX = (np.array([[1, -2, 0, 2], [2, -1, 1, -2], [-2, 1, 2, 0]])
            + 1j * np.array([[2, 0, -1, 0], [2, 1, 1, 2], [-1, 1, 2, -2]])).astype(np.complex64)


def _complex_minmax(mod, x):
    np_ = mod.numpy
    return [np_.max(x), np_.min(x), np_.ptp(x), np_.max(x, axis=0),
            np_.min(x, axis=1, keepdims=True), np_.max(x, where=x.real > 0, initial=-5),
            np_.nanmin(x, axis=0), np_.max(np.zeros((0, 2), np.complex64), axis=0,
                                           initial=1 + 1j)]


# JAX 0.10.2: complex numbers compare lexicographically (real part, then imaginary).
_COMPLEX_WANT = [2 + 2j, -2 - 1j, 4 + 3j, [2 + 2j, 1 + 1j, 2 + 2j, 2 + 0j],
                 [[-2 + 0j], [-2 + 2j], [-2 - 1j]], 2 + 2j,
                 [-2 - 1j, -2 + 0j, 0 - 1j, -2 + 2j], [1 + 1j, 1 + 1j]]


@pytest.mark.parametrize("jit", [False, True])
def test_complex_max_min_ptp_compare_lexicographically_as_jax(jit):
    fn = minijax.jit(lambda x: _complex_minmax(minijax, x)) if jit else \
        (lambda x: _complex_minmax(minijax, x))
    got = fn(_COMPLEX)
    for g, w in zip(got, _COMPLEX_WANT, strict=True):
        assert np.asarray(g).dtype == np.complex64
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w, np.complex64))
    # The gradient of a max through a complex cast goes to the winner only.
    grad = minijax.grad(lambda v: jnp.max(v.astype(jnp.complex64)).real)(
        np.array([1.0, 3.0, 2.0], np.float32))
    np.testing.assert_array_equal(np.asarray(grad), [0.0, 1.0, 0.0])


@needs_jax
def test_complex_max_min_ptp_live_against_jax():
    want = _complex_minmax(real_jax, _COMPLEX)
    for g, w in zip(_complex_minmax(minijax, _COMPLEX), want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("jit", [False, True])
def test_reductions_with_dtype_bool_add_as_or_and_multiply_as_and(jit):
    x = np.array([0, 2, -1, 0, 3], np.int8)

    def fns(v):
        return [jnp.cumsum(v, dtype=bool), jnp.cumprod(v, dtype=bool),
                jnp.nansum(v, dtype=bool), jnp.prod(v, dtype=bool), jnp.sum(v, dtype=bool),
                jnp.nancumsum(v, dtype=bool), jnp.prod(v[1:3], dtype=bool)]
    got = (minijax.jit(fns) if jit else fns)(x)
    # JAX 0.10.2
    want = [[False, True, True, True, True], [False] * 5, True, False, True,
            [False, True, True, True, True], True]
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    if real_jnp is not None:
        for g, w in zip(got, [f for f in [real_jnp.cumsum(x, dtype=bool),
                                          real_jnp.cumprod(x, dtype=bool)]], strict=False):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("jit", [False, True])
def test_mean_with_an_integer_dtype_divides_the_wrapped_sum_as_jax(jit):
    x = np.arange(300, dtype=np.uint32).reshape(2, 150) * 7
    b = np.array([[True, False, True]])

    def fns(v, w):
        return [jnp.mean(v, dtype=np.uint8), jnp.mean(v, axis=1, dtype=np.int8),
                jnp.mean(v[:, :3], axis=0, dtype=np.int32, keepdims=True),
                jnp.mean(w, axis=0, dtype=np.int8, where=np.array([[False, False, True]])),
                jnp.mean(w, dtype=np.uint8, where=np.zeros((1, 3), bool)),
                jnp.mean(v, axis=1, dtype=np.int16, keepdims=True, where=v > 100)]
    got = (minijax.jit(fns) if jit else fns)(x, b)
    # JAX 0.10.2: the sum wraps in the dtype; x / 0 is -1 (all ones unsigned)
    want = [(np.uint8, 2), (np.int8, [1, 0]), (np.int32, [[525, 532, 539]]),
            (np.int8, [-1, -1, 1]), (np.uint8, 255), (np.int16, [[88], [-176]])]
    for g, (dt, w) in zip(got, want, strict=True):
        assert np.asarray(g).dtype == dt
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w, dt))
    with pytest.raises(TypeError, match="bool"):
        jnp.mean(x, dtype=bool)
