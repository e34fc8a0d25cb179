"""dot_general, dot and conv_general_dilated: values against einsum and a naive float64
Python-loop convolution written from XLA's semantics (several layouts, strides, padding,
dilations, feature and batch groups), gradients by finite differences (order 2), vmap
against a Python loop with random in_axes, lowered HLO against eager, and errors."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minijax
from minijax import lax
from minijax.test_util import check_grads, check_vmap
from minijax.test_util import evaluate_lowered as lowered

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])






# --------------------------------------------------------------------------- dot_general


@st.composite
def dot_problems(draw):
    """Random shapes and dimension numbers: batch, contracting and free dims, permuted."""
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nlf, nrf = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    size = st.integers(0, 3)
    batch = [draw(size) for _ in range(nb)]
    contract = [draw(size) for _ in range(nc)]
    lhs_kinds = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [
        ("f", draw(size)) for _ in range(nlf)]
    rhs_kinds = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [
        ("f", draw(size)) for _ in range(nrf)]
    lhs_kinds = draw(st.permutations(lhs_kinds))
    rhs_kinds = draw(st.permutations(rhs_kinds))

    def layout(kinds):
        shape = tuple(batch[i] if k == "b" else contract[i] if k == "c" else i
                      for k, i in kinds)
        b = tuple(next(p for p, (k, j) in enumerate(kinds) if k == "b" and j == i)
                  for i in range(nb))
        c = tuple(next(p for p, (k, j) in enumerate(kinds) if k == "c" and j == i)
                  for i in range(nc))
        return shape, b, c
    ls, lb, lc = layout(lhs_kinds)
    rs, rb, rc = layout(rhs_kinds)
    return ls, rs, ((lc, rc), (lb, rb))


def einsum_reference(lhs, rhs, dims):
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lsub = [None] * lhs.ndim
    rsub = [None] * rhs.ndim
    for a, b in zip(lb, rb):
        lsub[a] = rsub[b] = next(letters)
    for a, b in zip(lc, rc):
        lsub[a] = rsub[b] = next(letters)
    for i in range(lhs.ndim):
        lsub[i] = lsub[i] or next(letters)
    for i in range(rhs.ndim):
        rsub[i] = rsub[i] or next(letters)
    out = ([lsub[a] for a in lb] + [lsub[i] for i in range(lhs.ndim) if i not in lb + lc]
           + [rsub[i] for i in range(rhs.ndim) if i not in rb + rc])
    return np.einsum(f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}",
                     lhs.astype(np.float64), rhs.astype(np.float64))


@SETTINGS
@given(problem=dot_problems(), seed=st.integers(0, 2**16))
def test_dot_general_against_einsum(problem, seed):
    ls, rs, dims = problem
    rng = np.random.default_rng(seed)
    lhs = rng.standard_normal(ls).astype(np.float32)
    rhs = rng.standard_normal(rs).astype(np.float32)
    got = lax.dot_general(lhs, rhs, dims)
    want = einsum_reference(lhs, rhs, dims)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lowered(lambda a, b: lax.dot_general(a, b, dims), lhs, rhs)[0],
                               want, rtol=1e-4, atol=1e-4)


def test_dot_general_integer_and_preferred_types():
    a = np.full((2, 3), 100, np.int8)
    out = lax.dot_general(a, a.T.copy(), (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.full((2, 2), 30000))
    wrapped = lax.dot_general(np.full((2,), 2**30, np.int32), np.full((2,), 2, np.int32),
                              (((0,), (0,)), ((), ())))
    assert int(wrapped) == 0
    h = np.ones((4, 300), np.float16) * np.float16(0.1)
    r = lax.dot_general(h, h.T.copy(), (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, np.full((4, 4), 300 * np.float32(np.float16(0.1)) ** 2),
                               rtol=1e-4)
    low = lowered(lambda u, v: lax.dot_general(u, v, (((1,), (0,)), ((), ())),
                                               preferred_element_type=np.int32), a, a.T.copy())
    assert low[0].dtype == np.int32
    np.testing.assert_array_equal(low[0], np.full((2, 2), 30000))
    assert lax.dot(np.ones(3, np.float32), np.ones(3, np.float32),
                   precision=lax.Precision.HIGHEST).shape == ()


def test_dot_forms():
    rng = np.random.default_rng(0)
    v, w = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    m = rng.standard_normal((2, 3)).astype(np.float32)
    n = rng.standard_normal((3, 4)).astype(np.float32)
    for a, b in [(v, w), (m, v), (v, n), (m, n)]:
        np.testing.assert_allclose(lax.dot(a, b), np.dot(a, b), rtol=1e-5, atol=1e-6)


def test_dot_general_gradients(x64):
    rng = np.random.default_rng(1)
    lhs, rhs = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5, 2))
    dims = (((2,), (0,)), ((0,), (2,)))
    check_grads(lambda a, b: lax.dot_general(a, b, dims), (lhs, rhs), 2)
    check_grads(lambda a: lax.dot_general(a, rhs, dims), (lhs,), 2)
    check_grads(lambda b: lax.dot_general(lhs, b, dims), (rhs,), 2)
    # Contracting dimensions given out of order on the rhs.
    x, y = rng.standard_normal((3, 2, 4)), rng.standard_normal((4, 3, 5))
    check_grads(lambda a, b: lax.dot_general(a, b, (((0, 2), (1, 0)), ((), ()))), (x, y), 2)
    check_grads(lambda a, b: lax.dot(a, b), (rng.standard_normal((2, 3)),
                                           rng.standard_normal(3)), 2)


@SETTINGS
@given(seed=st.integers(0, 2**16))
def test_dot_general_vmap(seed):
    rng = np.random.default_rng(seed)
    dims = (((2,), (0,)), ((0,), (2,)))
    lhs, rhs = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5, 2))
    la, ra = rng.choice([0, 1, 2, 3, None]), rng.choice([0, 1, 2, 3, None])
    if la is None and ra is None:
        la = 0
    args = [np.stack([lhs * (k + 1) for k in range(3)], axis=la) if la is not None else lhs,
            np.stack([rhs - k for k in range(3)], axis=ra) if ra is not None else rhs]
    out_axis = int(rng.integers(0, 4))
    check_vmap(lambda a, b: lax.dot_general(a, b, dims), args, (la, ra), out_axis,
               atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- convolution


def naive_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dnums, fgc=1, bgc=1):
    """A float64 loop over every output element, straight from XLA's definition."""
    lhs_spec, rhs_spec, out_spec = dnums
    x = np.transpose(lhs, lhs_spec).astype(np.float64)
    w = np.transpose(rhs, rhs_spec).astype(np.float64)
    n_b, n_c = x.shape[:2]
    n_o, n_i = w.shape[:2]
    sp_in, window = x.shape[2:], w.shape[2:]
    out_sp = []
    for n, k, s, (lo, hi), ld, rd in zip(sp_in, window, strides, padding, lhs_dil, rhs_dil):
        padded = (0 if n == 0 else (n - 1) * ld + 1) + lo + hi
        span = 0 if k == 0 else (k - 1) * rd + 1
        out_sp.append(0 if padded < span or k == 0 else (padded - span) // s + 1)
    out = np.zeros((n_b // bgc, n_o) + tuple(out_sp))
    for nb, o in itertools.product(range(n_b // bgc), range(n_o)):
        fg = o // (n_o // fgc)
        bg = o // (n_o // bgc)
        n = bg * (n_b // bgc) + nb
        for p in itertools.product(*map(range, out_sp)):
            acc = 0.0
            for i in range(n_i):
                c = fg * n_i + i
                for k in itertools.product(*map(range, window)):
                    idx = []
                    for d in range(len(p)):
                        pos = p[d] * strides[d] + k[d] * rhs_dil[d] - padding[d][0]
                        if pos % lhs_dil[d] or not 0 <= pos // lhs_dil[d] < sp_in[d]:
                            break
                        idx.append(pos // lhs_dil[d])
                    else:
                        acc += x[(n, c) + tuple(idx)] * w[(o, i) + k]
            out[(nb, o) + p] = acc
    return np.transpose(out, np.argsort(out_spec))


LAYOUTS = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OIHW", "NCHW"),
           ("CHWN", "IOWH", "HNCW")]


def _shape(spec, sizes):
    return tuple(sizes[c] for c in spec)


@st.composite
def conv_problems(draw, ndim=2):
    layout = draw(st.sampled_from(LAYOUTS)) if ndim == 2 else draw(st.sampled_from(
        [("NCH", "OIH", "NCH"), ("NHC", "HIO", "NHC")]))
    groups = draw(st.sampled_from(["none", "feature", "batch"]))
    g = draw(st.integers(1, 3)) if groups != "none" else 1
    fgc, bgc = (g, 1) if groups == "feature" else (1, g) if groups == "batch" else (1, 1)
    n = draw(st.integers(0, 2)) * bgc
    c_in = draw(st.integers(1, 2)) * fgc
    o = draw(st.integers(1, 2)) * g
    spatial = [draw(st.integers(0, 5)) for _ in range(ndim)]
    window = [draw(st.integers(1, 3)) for _ in range(ndim)]
    strides = [draw(st.integers(1, 3)) for _ in range(ndim)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(ndim)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(ndim)]
    padding = draw(st.one_of(st.sampled_from(["VALID", "SAME", "SAME_LOWER"]),
                             st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2)),
                                      min_size=ndim, max_size=ndim)))
    if not isinstance(padding, str):  # JAX rejects a padded size < 0 (a ValueError)
        padding = [(lo, max(hi, -lo - (0 if s == 0 else 1 + d * (s - 1))))
                   for (lo, hi), s, d in zip(padding, spatial, lhs_dil)]
    letters = "HW" if ndim == 2 else "H"
    lhs_sizes = {"N": n, "C": c_in, **dict(zip(letters, spatial))}
    rhs_sizes = {"O": o, "I": c_in // fgc, **dict(zip(letters, window))}
    return dict(lhs_shape=_shape(layout[0], lhs_sizes), rhs_shape=_shape(layout[1], rhs_sizes),
                layout=layout, strides=strides, padding=padding, lhs_dil=lhs_dil,
                rhs_dil=rhs_dil, fgc=fgc, bgc=bgc)


def _conv(p):
    def f(lhs, rhs):
        return lax.conv_general_dilated(lhs, rhs, p["strides"], p["padding"], p["lhs_dil"],
                                        p["rhs_dil"], p["layout"], p["fgc"], p["bgc"])
    return f


@SETTINGS
@given(p=st.one_of(conv_problems(2), conv_problems(1)), seed=st.integers(0, 2**16))
def test_conv_against_naive_loop(p, seed):
    rng = np.random.default_rng(seed)
    lhs = rng.standard_normal(p["lhs_shape"]).astype(np.float32)
    rhs = rng.standard_normal(p["rhs_shape"]).astype(np.float32)
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, p["layout"])
    pads = p["padding"]
    if isinstance(pads, str):
        window = [(rhs.shape[d] - 1) * r + 1 for d, r in zip(dn.rhs_spec[2:], p["rhs_dil"])]
        pads = lax.padtype_to_pads([lhs.shape[d] for d in dn.lhs_spec[2:]], window,
                                   p["strides"], pads)
    want = naive_conv(lhs, rhs, p["strides"], pads, p["lhs_dil"], p["rhs_dil"], dn,
                      p["fgc"], p["bgc"])
    got = _conv(p)(lhs, rhs)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    in_sizes = [lhs.shape[d] for d in dn.lhs_spec[2:]]
    if all((n - 1) * d + 1 + lo + hi >= 0 for n, d, (lo, hi) in zip(in_sizes, p["lhs_dil"],
                                                                      pads)):
        # (The HLO evaluator rejects a padded size below zero, as XLA's shape check does.)
        np.testing.assert_allclose(lowered(_conv(p), lhs, rhs)[0], want, rtol=1e-4,
                                   atol=1e-4)


def test_conv_3d_and_integer():
    rng = np.random.default_rng(5)
    lhs = rng.standard_normal((1, 2, 3, 4, 3))
    rhs = rng.standard_normal((2, 2, 2, 1, 2))
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, ("NCDHW", "OIDHW", "NCDHW"))
    got = lax.conv_general_dilated(lhs.astype(np.float32), rhs.astype(np.float32), (1, 2, 1),
                                   [(1, 0), (0, 0), (0, 1)], None, None, dn)
    want = naive_conv(lhs, rhs, (1, 2, 1), [(1, 0), (0, 0), (0, 1)], (1, 1, 1), (1, 1, 1), dn)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    il = rng.integers(-3, 3, (1, 2, 5)).astype(np.int8)
    ir = rng.integers(-3, 3, (2, 2, 2)).astype(np.int8)
    out = lax.conv(il, ir, (1,), "VALID", preferred_element_type=np.int32)
    assert out.dtype == np.int32
    dn1 = lax.conv_dimension_numbers(il.shape, ir.shape, None)
    np.testing.assert_array_equal(out, naive_conv(il, ir, (1,), [(0, 0)], (1,), (1,), dn1))


def test_conv_simple_forms_and_dimension_numbers():
    rng = np.random.default_rng(6)
    lhs = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    rhs = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    a = lax.conv(lhs, rhs, (1, 1), "SAME")
    b = lax.conv_with_general_padding(lhs, rhs, (1, 1), [(1, 1), (0, 1)], None, None)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    dn = lax.conv_dimension_numbers((2, 6, 5, 3), (3, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_general_permutations(("NCHW", "OIHW", "NCHW")) == (
        (0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME") == [(1, 1), (0, 1)]
    assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME_LOWER") == [(1, 1), (1, 0)]
    assert lax.padtype_to_pads((5,), (3,), (1,), "valid") == [(0, 0)]


CONV_GRAD_CASES = [
    dict(lhs_shape=(2, 3, 5, 4), rhs_shape=(2, 3, 2, 3), layout=LAYOUTS[0], strides=(2, 1),
         padding=[(1, 0), (2, 1)], lhs_dil=(1, 1), rhs_dil=(1, 2), fgc=1, bgc=1),
    dict(lhs_shape=(1, 5, 4, 4), rhs_shape=(2, 2, 2, 4), layout=LAYOUTS[1], strides=(1, 2),
         padding="SAME", lhs_dil=(2, 1), rhs_dil=(1, 1), fgc=2, bgc=1),
    dict(lhs_shape=(4, 2, 5), rhs_shape=(4, 2, 2), layout=("NCH", "OIH", "NCH"), strides=(3,),
         padding=[(0, -1)], lhs_dil=(1,), rhs_dil=(2,), fgc=1, bgc=2),
]


@pytest.mark.parametrize("case", range(len(CONV_GRAD_CASES)))
def test_conv_gradients(x64, case):
    p = CONV_GRAD_CASES[case]
    rng = np.random.default_rng(case)
    lhs, rhs = rng.standard_normal(p["lhs_shape"]), rng.standard_normal(p["rhs_shape"])
    check_grads(_conv(p), (lhs, rhs), 2)


@pytest.mark.parametrize("case", range(len(CONV_GRAD_CASES)))
def test_conv_vmap(case):
    p = CONV_GRAD_CASES[case]
    rng = np.random.default_rng(10 + case)
    lhs, rhs = rng.standard_normal(p["lhs_shape"]), rng.standard_normal(p["rhs_shape"])
    for _ in range(3):
        la = rng.choice([None] + list(range(len(lhs.shape) + 1)))
        ra = rng.choice([None] + list(range(len(rhs.shape) + 1)))
        if la is None and ra is None:
            ra = 0
        args = [np.stack([lhs + k for k in range(2)], axis=la) if la is not None else lhs,
                np.stack([rhs * (k + 1) for k in range(2)], axis=ra) if ra is not None else rhs]
        check_vmap(_conv(p), args, (la, ra), atol=1e-4, rtol=1e-4)


def test_conv_grad_lowered_matches_eager():
    p = CONV_GRAD_CASES[1]
    rng = np.random.default_rng(7)
    lhs = rng.standard_normal(p["lhs_shape"]).astype(np.float32)
    rhs = rng.standard_normal(p["rhs_shape"]).astype(np.float32)

    def loss(a, b):
        return lax.reduce_sum(lax.mul(_conv(p)(a, b), _conv(p)(a, b)), (0, 1, 2, 3))
    g = minijax.grad(loss, argnums=(0, 1))
    got = lowered(g, lhs, rhs)
    for a, b in zip(got, g(lhs, rhs)):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- errors


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match=r"dot_general requires contracting dimensions to have "
                                        r"the same shape, got \(3,\) and \(2,\)"):
        lax.dot_general(x, x, (((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="batch dimensions to have the same shape"):
        lax.dot_general(x, np.ones((3, 2), np.float32), (((1,), (1,)), ((0,), (0,))))
    # JAX's dot_general accepts mixed dtypes (tests/test_jax_parity_lax.py); conv does not.
    with pytest.raises(TypeError, match="conv_general_dilated requires operands of the same"):
        lax.conv_general_dilated(np.ones((1, 2, 4, 4), np.float32),
                                 np.ones((3, 2, 2, 2), np.int32), (1, 1), "VALID")
    with pytest.raises(TypeError, match="to be in range"):
        lax.dot_general(x, x, (((2,), (0,)), ((), ())))
    with pytest.raises(TypeError, match=r"Incompatible shapes for dot: got \(2, 3\) and "
                                        r"\(2, 3\)"):
        lax.dot(x, x)
    lhs, rhs = np.ones((1, 4, 5, 5), np.float32), np.ones((2, 3, 2, 2), np.float32)
    with pytest.raises(TypeError, match=r"conv_general_dilated lhs feature dimension size "
                                        r"divided by feature_group_count must equal the rhs "
                                        r"input feature dimension size, but 4 // 1 != 3"):
        lax.conv(lhs, rhs, (1, 1), "VALID")
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        lax.conv(lhs, np.ones((2, 4, 2, 2), np.float32), (1, 1), "FULL")
    with pytest.raises(ValueError, match="At most one of batch_group_count"):
        lax.conv_general_dilated(lhs, np.ones((4, 2, 2, 2), np.float32), (1, 1), "VALID",
                                 feature_group_count=2, batch_group_count=2)
    with pytest.raises(TypeError, match="must contain the characters 'N' and 'C'"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "VALID",
                                 dimension_numbers=("NXHW", "OIHW", "NCHW"))
    with pytest.raises(TypeError, match="same set of spatial characters"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "VALID",
                                 dimension_numbers=("NCHW", "OIHX", "NCHW"))
    with pytest.raises(TypeError, match="requires lhs and rhs ndim to be equal"):
        lax.conv(lhs, np.ones((2, 4, 2), np.float32), (1,), "VALID")
    with pytest.raises(TypeError, match="window_strides must have one entry per spatial"):
        lax.conv(lhs, np.ones((2, 4, 2, 2), np.float32), (1,), "VALID")
    with pytest.raises(TypeError, match="conv_general_dilated requires operands of the same"):
        lax.conv(lhs, np.ones((2, 4, 2, 2), np.int32), (1, 1), "VALID")


def test_preferred_element_type_gradients():
    a = np.ones((2, 3), np.float16)
    b = np.arange(12, dtype=np.float16).reshape(3, 4)
    ga, gb = minijax.grad(lambda u, v: lax.reduce_sum(
        lax.dot(u, v, preferred_element_type=np.float32), (0, 1)), argnums=(0, 1))(a, b)
    assert ga.dtype == gb.dtype == np.float16
    np.testing.assert_array_equal(ga, np.tile(b.astype(np.float32).sum(1), (2, 1)))
    np.testing.assert_array_equal(gb, np.full((3, 4), 2.0))
    lhs, rhs = np.ones((1, 2, 4, 4), np.float16), np.ones((3, 2, 2, 2), np.float16)
    gl, gr = minijax.grad(lambda u, v: lax.reduce_sum(lax.conv(
        u, v, (1, 1), "VALID", preferred_element_type=np.float32), (0, 1, 2, 3)),
        argnums=(0, 1))(lhs, rhs)
    assert gl.dtype == gr.dtype == np.float16
    corner = np.outer([1, 2, 2, 1], [1, 2, 2, 1]) * 3
    np.testing.assert_array_equal(np.asarray(gl)[0, 0], corner)
    np.testing.assert_array_equal(np.asarray(gr)[0, 0], np.full((2, 2), 9.0))
