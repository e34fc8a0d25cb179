"""Differences from real JAX 0.10.2 found by a differential campaign: linspace's rounding,
loop weak types, softmax gradients at -inf, pad with a callable mode, complex sorting and
searching, einsum ellipses, and inputs JAX rejects.

JAX's values are hard-coded (taken from JAX 0.10.2 on CPU); when jax is importable the
tests also compare live."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import lax

try:
    import jax as real_jax
    import jax.numpy as real_jnp
except ImportError:  # CI has no JAX
    real_jax = real_jnp = None

needs_jax = pytest.mark.skipif(real_jax is None, reason="real JAX is not installed")


def _bits(x):
    x = np.ascontiguousarray(np.atleast_1d(np.asarray(x)))
    if x.dtype.kind == "c":
        x = x.view(np.float32 if x.dtype == np.complex64 else np.float64)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.itemsize]).tolist()


# --------------------------------------------------------------------------- linspace


def _linspace_reference(start, stop, num, dtype, endpoint=True):
    """XLA's evaluation of JAX's linspace for scalar bounds, op by op in NumPy (float16)."""
    dt = np.dtype(dtype)
    s, e = dt.type(start), dt.type(stop)
    div = num - 1 if endpoint else num
    c = dt.type(1) / dt.type(div)
    i = np.arange(div).astype(dt)
    out = s * (dt.type(1) - i * c) + i * (e * c)
    return np.concatenate([out, [e]]).astype(dt) if endpoint else out.astype(dt)


def test_linspace_float16_and_bfloat16_bits_as_jax():
    out, step = jnp.linspace(-3.7, 11.3, 9, dtype="float16", retstep=True)
    assert _bits(out) == [50022, 48972, 10880, 16304, 17305, 17837, 18315, 18614, 18854]
    assert _bits(step) == [16256]
    out, step = jnp.linspace(-3.7, 11.3, 9, dtype="bfloat16", retstep=True)
    assert _bits(out) == [49261, 49129, 15680, 16376, 16500, 16566, 16626, 16663, 16693]
    assert _bits(step) == [16368]
    for dt, want in [("float16", [[13517, 15638, 16509, 17006, 17456, 17704, 17953],
                                  [49408, 49117, 48568, 47907, 46524, 12716, 14774]]),
                     ("bfloat16", [[16026, 16290, 16399, 16461, 16517, 16549, 16579],
                                   [49184, 49149, 49080, 48995, 48828, 15932, 16182]])]:
        f = lambda a, b, dt=dt: jnp.linspace(a, b, 7, endpoint=False, axis=1)  # noqa: E731
        args = (jnp.array([0.3, -2.5], dt), jnp.array([7.1, 1.25], dt))
        assert _bits(f(*args)) == want
        assert _bits(minijax.jit(f)(*args)) == want


def test_linspace_complex_bits_as_jax():
    want = [1050253722, 1071225242, 3191362026, 1069044204, 3207132610, 1066863166,
            3214011269, 1064011039, 3218037801, 1059648963, 3221644902, 1053609165]
    assert _bits(jnp.linspace(0.3 + 1.7j, -2.1 + 0.4j, 6, dtype="complex64")) == want
    f = minijax.jit(lambda a, b: jnp.linspace(a, b, 6))
    assert _bits(f(jnp.complex64(0.3 + 1.7j), jnp.complex64(-2.1 + 0.4j))) == want


@settings(max_examples=40, deadline=None)
@given(st.floats(-50, 50, width=16), st.floats(-50, 50, width=16), st.integers(2, 40),
       st.booleans())
def test_linspace_float16_matches_xla_rounding(start, stop, num, endpoint):
    got = jnp.linspace(start, stop, num, endpoint=endpoint, dtype="float16")
    want = _linspace_reference(start, stop, num, np.float16, endpoint)
    assert _bits(got) == _bits(want)


@needs_jax
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64", "int32", "uint8",
                                   "float32"])
def test_linspace_live_against_jax(dtype):
    rng = np.random.default_rng(0)
    for _ in range(25):
        s, e = (float(v) for v in np.abs(rng.normal(size=2) * 10))
        n = int(rng.integers(0, 30))
        arrays = (np.array([s, e], np.float32), np.array([e, 1.5], np.float32))
        if dtype == "complex64":  # real bounds: XLA folds them to real FMAs as float32
            s, e = complex(s, e), complex(e, -s)
            arrays = tuple(a * np.complex64(1 - 2j) for a in arrays)
        for endpoint in (True, False):
            for bounds in ((s, e), arrays):
                kw = dict(endpoint=endpoint, dtype=dtype, retstep=True, axis=-1)
                got, gstep = jnp.linspace(*bounds, n, **kw)
                want, wstep = real_jnp.linspace(*bounds, n, **kw)
                got, want = np.asarray(got), np.asarray(want)
                assert got.dtype == want.dtype and got.shape == want.shape
                if dtype == "float32":
                    # XLA:CPU contracts the final multiply-add into an FMA: last ulp only.
                    np.testing.assert_array_max_ulp(
                        np.ascontiguousarray(got).view(np.float32),
                        np.ascontiguousarray(want).view(np.float32), 1)
                else:
                    assert _bits(got) == _bits(want), (bounds, n, endpoint)
                    assert _bits(gstep) == _bits(wstep) or np.isnan(wstep).all()
                if n:
                    assert _bits(got[..., 0]) == _bits(want[..., 0])


# --------------------------------------------------------------------------- loop weak types


def _weak(tree):
    return [(str(x.dtype), x.weak_type) if hasattr(x, "weak_type") else type(x).__name__
            for x in minijax.tree_util.tree_leaves(tree)]


# (case, JAX 0.10.2's (dtype, weak_type) per result leaf; a type name for a forwarded init)
_LOOP_CASES = {
    "carry_strong_after_weak_init_y_is_carry":
        (lambda L, np_: L.scan(lambda c, x: (c + x, c), 0.0, np_.arange(3.0)),
         [("float32", False), ("float32", True)]),
    "ys_weak_from_first_trace":
        (lambda L, np_: L.scan(lambda c, x: (c + x, (c, c + 1, x)), 0.0, np_.arange(3.0)),
         [("float32", False), ("float32", True), ("float32", True), ("float32", False)]),
    "strong_init_weak_body":
        (lambda L, np_: L.scan(lambda c, x: (1.5, c), np_.float32(0), None, length=2),
         [("float32", True), ("float32", False)]),
    "forwarded_python_carry":
        (lambda L, np_: L.scan(lambda c, x: (c, 2.0), 0.0, np_.arange(3.0)),
         ["float", ("float32", True)]),
    "forwarded_int_carry_int8_ys":
        (lambda L, np_: L.scan(lambda c, x: (c, x + 1), 0, np_.arange(2, dtype=np_.int8)),
         ["int", ("int8", False)]),
    "while_second_carry_weak":
        (lambda L, np_: L.while_loop(lambda c: c[0] < 3,
                                     lambda c: (c[0] + np_.float32(1), c[0]), (0.0, 1.0)),
         [("float32", False), ("float32", True)]),
    "fori_swapped_weakness":
        (lambda L, np_: L.fori_loop(0, 2, lambda i, c: (1.0, c[0]), (np_.float32(0), 1.0)),
         [("float32", True), ("float32", False)]),
    "while_forwarded_python_carry":
        (lambda L, np_: L.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1), (1.0, 0)),
         ["float", ("int32", True)]),
}


@pytest.mark.parametrize("case", sorted(_LOOP_CASES))
def test_loop_result_weak_types_as_jax(case):
    fn, want = _LOOP_CASES[case]
    assert _weak(fn(lax, jnp)) == want
    if real_jax is not None:
        assert _weak(fn(real_jax.lax, real_jnp)) == want


def test_loop_weak_result_promotes_as_jax():
    # the weak ys of a scan take the other operand's dtype in later arithmetic
    _, ys = lax.scan(lambda c, x: (c + x, c), 0.0, jnp.arange(3.0))
    assert (ys + jnp.ones(3, jnp.float16)).dtype == jnp.float16
    np.testing.assert_array_equal(np.asarray(ys), [0.0, 0.0, 1.0])
    c, _ = lax.scan(lambda c, x: (c, 2.0), np.zeros(3, np.float32), jnp.arange(3.0))
    assert isinstance(c, np.ndarray)  # JAX hands a forwarded NumPy init back unchanged


def test_loop_jvp_tangents_keep_weak_types():
    def f(z):
        return lax.scan(lambda c, x: (c * z, 2.0 * c), 1.0, None, length=2)
    primals, tangents = minijax.jvp(f, (2.0,), (1.0,))
    assert _weak(tangents) == [("float32", True)] * 2
    np.testing.assert_allclose(np.asarray(tangents[0]), 4.0)  # d(z**2)/dz at 2
    np.testing.assert_allclose(np.asarray(tangents[1]), [0.0, 2.0])
    _, t = minijax.jvp(lambda z: lax.while_loop(lambda c: c < 3.0, lambda c: c * z, 1.0),
                       (2.0,), (1.0,))
    assert _weak(t) == [("float32", True)]
    np.testing.assert_allclose(np.asarray(t), 4.0)  # 1 -> 2 -> 4: z**2
    _, t = minijax.jvp(lambda z: lax.cond(True, lambda: z * 2.0, lambda: z), (2.0,), (1.0,))
    assert _weak(t) == [("float32", True)]


# --------------------------------------------------------------------------- softmax at -inf

_W = np.array([1.0, 2.0, 3.0], np.float32)


def _softmax_grad(nn, np_, name, x, where=None):
    f = getattr(nn.nn, name)
    kw = {} if where is None else {"where": where}

    def loss(x):
        y = f(x, **kw)
        return np_.sum(np_.where(np_.isfinite(y), y * _W[:x.shape[-1]], 0.0))
    return np.asarray(nn.grad(loss)(x)), np.asarray(nn.jit(nn.grad(loss))(x))


# (function, x, where, JAX 0.10.2's gradient of sum(f(x) * [1, 2, 3]) over finite outputs)
_SOFTMAX_CASES = [
    ("softmax", [-np.inf, -np.inf, 0.0], None, [-0.0, -0.0, 0.0]),
    ("softmax", [-np.inf, 2.0, -np.inf], None, [-0.0, 0.0, 0.0]),
    ("softmax", [0.0, -np.inf, 1.0], None, [-0.39322397, -0.0, 0.39322364]),
    ("softmax", [0.0, -np.inf, 1.0], [True, False, True], [-0.39322397, 0.0, 0.39322364]),
    ("softmax", [np.inf, 0.0, 1.0], [False, True, True], [0.0, -0.19661205, 0.19661164]),
    ("softmax", [np.inf, 0.0, 1.0], None, [np.nan, np.nan, np.nan]),
    ("softmax", [-np.inf, -np.inf], None, [np.nan, np.nan]),
    ("log_softmax", [0.0, -np.inf, 1.0], None, [-0.07576574, 0.0, 0.07576561]),
    ("log_softmax", [0.0, -np.inf, 1.0], [True, False, True], [-0.07576574, 0.0, 0.07576561]),
    ("log_softmax", [np.inf, 0.0, 1.0], [False, True, True], [0.0, 0.6552928, -0.655293]),
    ("log_softmax", [-np.inf, -np.inf, 0.0], None, [0.0, 0.0, 0.0]),
]


def _assert_same_zeros_and_nans(got, want):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    finite = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite])), (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", range(len(_SOFTMAX_CASES)))
def test_softmax_gradient_at_inf_as_jax(case):
    name, x, where, want = _SOFTMAX_CASES[case]
    x = np.array(x, np.float32)
    where = None if where is None else np.array(where)
    for got in _softmax_grad(minijax, jnp, name, x, where):
        _assert_same_zeros_and_nans(got, want)
    if real_jax is not None:
        _assert_same_zeros_and_nans(_softmax_grad(real_jax, real_jnp, name, x, where)[0], want)


@needs_jax
@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([-np.inf, np.inf, 0.0, 1.0, -2.0, 3.5]), min_size=3,
                max_size=3), st.one_of(st.none(), st.lists(st.booleans(), min_size=3,
                                                            max_size=3)),
       st.sampled_from(["softmax", "log_softmax"]))
def test_softmax_gradient_live_against_jax(x, where, name):
    x = np.array(x, np.float32)
    where = None if where is None else np.array(where)
    want = _softmax_grad(real_jax, real_jnp, name, x, where)[0]
    for got in _softmax_grad(minijax, jnp, name, x, where):
        _assert_same_zeros_and_nans(got, want)


# --------------------------------------------------------------------------- pad(mode=callable)


def _pad_with(vector, pad_width, iaxis, kwargs):
    value = kwargs.get("padder", 10)
    vector = vector.at[:pad_width[0]].set(value)
    if pad_width[1]:
        vector = vector.at[-pad_width[1]:].set(value)
    return vector


def _ramp(vector, pad_width, iaxis, kwargs):
    return vector * (iaxis + 2) + 1


def test_pad_with_callable_mode_as_jax():
    a = jnp.arange(6).reshape(2, 3)
    out = jnp.pad(a, ((1, 0), (0, 2)), _pad_with, padder=-1)
    assert out.dtype == jnp.int32
    assert np.asarray(out).tolist() == [[-1, -1, -1, -1, -1], [0, 1, 2, -1, -1],
                                        [3, 4, 5, -1, -1]]
    # NumPy's documented example (same protocol, with returned vectors)
    want = np.pad(np.arange(6).reshape(2, 3), 2, _np_pad_with)
    np.testing.assert_array_equal(np.asarray(jnp.pad(a, 2, _pad_with)), want)
    # axes are processed in order, each seeing the previous axis' result (JAX's values)
    ramp = [[4, 4, 4, 4, 4], [4, 4, 10, 16, 4], [4, 22, 28, 34, 4], [4, 4, 4, 4, 4]]
    np.testing.assert_array_equal(np.asarray(jnp.pad(a.astype(float), 1, _ramp)), ramp)
    np.testing.assert_array_equal(np.asarray(minijax.jit(lambda a: jnp.pad(a, 1, _ramp))(a)),
                                  ramp)
    if real_jnp is not None:
        np.testing.assert_array_equal(np.asarray(real_jnp.pad(real_jnp.arange(6.).reshape(2, 3),
                                                              1, _ramp)), ramp)


def _np_pad_with(vector, pad_width, iaxis, kwargs):
    vector[:pad_width[0]] = 10
    if pad_width[1]:
        vector[-pad_width[1]:] = 10


def test_pad_with_callable_mode_errors_as_jax():
    with pytest.raises(ValueError, match="0-d"):  # JAX: ValueError for a 0-d array
        jnp.pad(jnp.float32(3.0), 1, _ramp)
    with pytest.raises(TypeError):  # the function must return the vector
        jnp.pad(jnp.ones((2, 2)), 1, lambda v, p, i, k: None)


# --------------------------------------------------------------------------- complex sorting

_NAN, _INF = np.nan, np.inf
_CX = np.array([1 + 2j, 1 + 1j, _NAN + 0j, complex(0, _NAN), complex(_NAN, _NAN), -1 + 5j,
                complex(1, _NAN), _NAN + 1j, 1 + 1j, 0j, -0.0 + 0j, complex(_INF, 0),
                complex(-_INF, 1), complex(1, -_INF)], np.complex64)
# JAX 0.10.2: real part first, then imaginary, each with NaN last (-0.0 ties 0.0)
_CX_ARGSORT = [12, 5, 9, 10, 3, 13, 1, 8, 0, 6, 11, 2, 7, 4]
_CX_ARGSORT_DESC = [4, 7, 2, 11, 6, 0, 1, 8, 13, 3, 9, 10, 5, 12]


def test_complex_sort_and_argsort_under_jit_as_jax():
    for f in (lambda x: x, minijax.jit):
        assert np.asarray(f(jnp.argsort)(_CX)).tolist() == _CX_ARGSORT
        got = np.asarray(f(jnp.sort)(_CX))
        np.testing.assert_array_equal(got, _CX[_CX_ARGSORT])
        desc = f(lambda x: jnp.argsort(x, descending=True, stable=True))(_CX)
        assert np.asarray(desc).tolist() == _CX_ARGSORT_DESC
    keys, vals = minijax.jit(lambda k, v: lax.sort((k, v), num_keys=1))(
        _CX[:2], jnp.arange(2))
    assert np.asarray(vals).tolist() == [1, 0]
    if real_jnp is not None:
        assert np.asarray(real_jax.jit(real_jnp.argsort)(_CX)).tolist() == _CX_ARGSORT


@pytest.mark.parametrize("method", ["scan", "scan_unrolled", "sort", "compare_all"])
def test_complex_searchsorted_as_jax(method):
    a = np.sort(np.array([1 + 2j, 1 + 1j, -1 + 5j, 0j, 2 - 1j, 2 + 0j, 1 + 1j], np.complex64))
    q = np.array([1 + 1.5j, 1 + 1j, 2j, -2 + 0j, 2 - 1j, 3 + 0j, _NAN + 0j, complex(1, _NAN)],
                 np.complex64)
    # JAX 0.10.2: lexicographic on (real, imag), NaN parts last
    want = {"left": [4, 2, 2, 0, 5, 7, 7, 5], "right": [4, 4, 2, 0, 6, 7, 7, 5]}
    for side, w in want.items():
        f = lambda a, q, side=side: jnp.searchsorted(a, q, side=side, method=method)  # noqa: E731
        assert np.asarray(f(a, q)).tolist() == w
        assert np.asarray(minijax.jit(f)(a, q)).tolist() == w
        if real_jnp is not None:
            assert np.asarray(real_jnp.searchsorted(a, q, side=side, method=method)).tolist() == w


# --------------------------------------------------------------------------- inputs JAX rejects

# (case, the error JAX 0.10.2 raises)
_REJECTED = {
    "clip_complex_input": (lambda j: j.clip(j.array([1 + 1j]), 0, 1), ValueError),
    "clip_complex_bound": (lambda j: j.clip(j.array([1.0]), 1j, 2), ValueError),
    "median_empty": (lambda j: j.median(j.zeros((0,))), TypeError),
    "quantile_empty": (lambda j: j.quantile(j.zeros((0,)), 0.5), TypeError),
    "percentile_empty_axis": (lambda j: j.percentile(j.zeros((0, 3)), 50, axis=0), TypeError),
    "nanmedian_empty": (lambda j: j.nanmedian(j.zeros((0,))), IndexError),
    "nanquantile_empty": (lambda j: j.nanquantile(j.zeros((0,)), 0.5), IndexError),
    "split_zero_sections": (lambda j: j.split(j.arange(4), 0), ZeroDivisionError),
    "array_split_zero_sections": (lambda j: j.array_split(j.arange(4), 0), ZeroDivisionError),
    "split_uneven": (lambda j: j.split(j.arange(5), 2), ValueError),
    "hsplit_uneven": (lambda j: j.hsplit(j.ones((2, 5)), 2), ValueError),
    "argmin_complex": (lambda j: j.argmin(j.array([1 + 1j, 2j])), TypeError),
    "bitwise_and_float": (lambda j: j.bitwise_and(j.array([1.0]), j.array([2.0])), TypeError),
    "round_complex_float_decimals": (lambda j: j.round(j.array([1.5]), 0.5), TypeError),
}


@pytest.mark.parametrize("case", sorted(_REJECTED))
def test_rejects_as_jax(case):
    fn, err = _REJECTED[case]
    with pytest.raises(err):
        fn(jnp)
    if real_jnp is not None:
        with pytest.raises(err):
            fn(real_jnp)


def test_rejection_messages_name_the_op():
    with pytest.raises(ValueError, match="clip: complex"):
        jnp.clip(jnp.array([1 + 1j]), 0, 1)
    with pytest.raises(TypeError, match=r"quantile: .*empty axis"):
        jnp.median(jnp.zeros((0,)))
    with pytest.raises(ZeroDivisionError, match="split: .*0 sections"):
        jnp.split(jnp.arange(4), 0)


def test_empty_results_still_allowed_as_jax():
    # JAX returns empty arrays when nothing would be gathered
    assert jnp.median(jnp.zeros((3, 0)), axis=0).shape == (0,)
    assert jnp.quantile(jnp.zeros((0,)), jnp.array([])).shape == (0,)
    np.testing.assert_array_equal(np.asarray(jnp.clip(jnp.arange(3.0), 0, 1)), [0, 1, 1])


# --------------------------------------------------------------------------- einsum ellipsis

_A = np.arange(24.0).reshape(2, 3, 4)
_B = np.arange(8.0).reshape(2, 4)


@pytest.mark.parametrize("spec,operands", [
    ("...ij->ij", (_A,)), ("...ij->", (_A,)), ("ij...->j", (_A,)), ("...ij->ji", (_A,)),
    ("...j,...j->", (_A, _B[0])), ("...ij,...j->i", (_A, _B)), ("i...->", (_B,)),
    ("ij...,j...->i", (_A, np.ones((3, 4)))), ("...ij->...", (_A,)), ("...i,...i", (_A, _B[:1])),
])
def test_einsum_output_without_ellipsis_sums_as_jax(spec, operands):
    # JAX (opt_einsum) sums the ellipsis dimensions an output leaves out; NumPy raises.
    lhs, rhs = spec.split("->") if "->" in spec else (spec, None)
    full = [t.replace("...", "xy"[:np.ndim(op) - len(t.replace("...", ""))])
            for t, op in zip(lhs.split(","), operands, strict=True)]
    if rhs is None:
        want = np.einsum(spec, *operands)
    else:
        ell = max(np.ndim(op) - len(t.replace("...", ""))
                  for t, op in zip(lhs.split(","), operands, strict=True))
        want = np.einsum(",".join(_right_align(f, ell) for f in full) + "->"
                         + rhs.replace("...", "xy"[:ell]), *operands)
    got = jnp.einsum(spec, *operands)
    np.testing.assert_allclose(np.asarray(got), want)
    if real_jnp is not None:
        np.testing.assert_allclose(np.asarray(real_jnp.einsum(spec, *operands)), want)


def _right_align(term, ell):
    """Ellipsis letters are aligned from the right (a shorter ellipsis takes the last ones)."""
    n = sum(c in "xy" for c in term)
    return term.replace("xy"[:n], "xy"[ell - n:ell]) if n else term
