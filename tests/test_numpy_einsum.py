"""einsum and the contraction family (minijax/numpy/einsum_ops.py) against NumPy: random
subscripts over hypothesis shapes, ellipsis/implicit output, contraction orders, gradients,
jit, and error messages that name the operand and the letter."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax.numpy import einsum_ops as E
from minijax.test_util import check_grads, enable_x64


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@st.composite
def einsum_specs(draw):
    """Random subscripts over letters a-e with sizes in 0..3, repeated letters allowed."""
    letters = "abcde"
    sizes = {c: draw(st.integers(0, 3)) for c in letters}
    n_ops = draw(st.integers(1, 3))
    terms = [draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3))
             for _ in range(n_ops)]
    used = sorted({c for t in terms for c in t})
    if draw(st.booleans()):
        out = draw(st.permutations(used).map(lambda p: p[:draw(st.integers(0, len(p)))]))
        subscripts = ",".join("".join(t) for t in terms) + "->" + "".join(out)
    else:
        subscripts = ",".join("".join(t) for t in terms)
    shapes = [tuple(sizes[c] for c in t) for t in terms]
    return subscripts, shapes, draw(st.integers(0, 1000))


@settings(max_examples=60, deadline=None)
@given(spec=einsum_specs(), optimize=st.sampled_from([False, "greedy", "optimal"]))
def test_einsum_random_vs_numpy(spec, optimize):
    subscripts, shapes, seed = spec
    ops = [_rand(s, seed + i, np.float64) for i, s in enumerate(shapes)]
    want = np.einsum(subscripts, *ops)
    with enable_x64():
        got = jnp.einsum(subscripts, *ops, optimize=optimize)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("subscripts,shapes", [
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,jk", [(2, 3, 4), (4, 5)]),
    ("i...,i...->...", [(3, 2, 2), (3, 2, 2)]),
    ("...,...", [(2, 1), (3,)]),
    ("ij...->...", [(2, 3)]),
    ("b...i,bi->b...", [(2, 4, 3), (2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("iij->ij", [(3, 3, 2)]),
    ("iii->", [(2, 2, 2)]),
    ("ij,ij->", [(1, 3), (2, 3)]),
    ("i,j,k->ijk", [(2,), (3,), (1,)]),
    ("abc,cd,de,ea->b", [(2, 3, 4), (4, 5), (5, 2), (2, 2)]),
    ("", [()]),
    (",->", [(), ()]),
    ("Aa,aB->AB", [(2, 3), (3, 2)]),
])
def test_einsum_cases(subscripts, shapes):
    ops = [_rand(s, i) for i, s in enumerate(shapes)]
    for optimize in (False, "auto"):
        got = jnp.einsum(subscripts, *ops, optimize=optimize)
        want = np.einsum(subscripts, *ops)
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_einsum_operand_list_form_dtypes_and_path():
    a, b = _rand((2, 3), 1), _rand((3, 4), 2)
    np.testing.assert_allclose(jnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b, rtol=1e-5)
    np.testing.assert_allclose(jnp.einsum(a, [Ellipsis, 1], b, [1, 2]), a @ b, rtol=1e-5)
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = jnp.einsum("ij,ij->i", i, i)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.einsum("ij,ij->i", i, i))
    mixed = jnp.einsum("ij,jk", i, b)
    assert mixed.dtype == np.float32
    out = jnp.einsum("ij,jk", a, b, preferred_element_type=np.float32)
    assert out.dtype == np.float32
    path, text = jnp.einsum_path("ij,jk,kl", _rand((2, 30), 1), _rand((30, 30), 2),
                                 _rand((30, 2), 3))
    assert path[0] == "einsum_path" and len(path) == 3 and "ij,jk,kl" in text


def test_einsum_greedy_order_contracts_small_pair_first():
    # (a b) is 2x2, then with c; contracting (b c) first would build a 500x500 product.
    path, _ = jnp.einsum_path("ij,jk,kl", _rand((2, 500), 1), _rand((500, 2), 2),
                              _rand((2, 500), 3))
    assert path[1] == (0, 1)


def test_einsum_grads_and_jit():
    with enable_x64():
        a, b, c = _rand((2, 3), 1, np.float64), _rand((3, 4), 2, np.float64), \
            _rand((4,), 3, np.float64)
        check_grads(lambda x, y, z: jnp.einsum("ij,jk,k->i", x, y, z), [a, b, c], order=2,
                    atol=1e-6, rtol=1e-6)
        check_grads(lambda x: jnp.einsum("ii->", x), [_rand((3, 3), 4, np.float64)], order=1)
        check_grads(lambda x, y: E.matmul(x, y), [_rand((2, 2, 3), 5, np.float64),
                                                  _rand((3, 2), 6, np.float64)], order=1)
    a, b = _rand((2, 3, 4), 1), _rand((4, 5), 2)
    f = minijax.jit(lambda x, y: jnp.einsum("bij,jk->bki", x, y))
    np.testing.assert_allclose(f(a, b), np.einsum("bij,jk->bki", a, b), rtol=1e-5)


@pytest.mark.parametrize("subscripts,shapes,match", [
    ("ij,j1", [(2, 3), (3, 3)], r"invalid subscript character '1' in operand 1 'j1'"),
    ("ij,jk", [(2, 3), (4, 5)], r"size of label 'j' for operand 1 \(4\) does not match"),
    ("ijk,jk", [(2, 3), (3, 4)], r"operand 0 has 2 dimension\(s\) but its subscripts 'ijk'"),
    ("ij", [(2, 3), (3, 4)], r"name 1 operand\(s\) but 2 were given"),
    ("ij->k", [(2, 3)], r"output subscript 'k' does not appear in any input"),
    ("ij->ii", [(2, 3)], r"output subscript 'i' appears more than once"),
    ("i...j...", [(2, 3)], r"more than one ellipsis"),
    ("ij->i->j", [(2, 3)], r"more than one '->'"),
])
def test_einsum_errors(subscripts, shapes, match):
    with pytest.raises(ValueError, match=match):
        jnp.einsum(subscripts, *[_rand(s) for s in shapes])


def test_einsum_out_argument_rejected():
    with pytest.raises(NotImplementedError, match="out"):
        jnp.einsum("i", _rand((2,)), out=np.zeros(2))


# --------------------------------------------------------------------------- dot family

shape_st = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(sa=st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple),
       sb=st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple),
       k=st.integers(0, 3), seed=st.integers(0, 100))
def test_matmul_broadcasting(sa, sb, k, seed):
    sa = sa[:-1] + (k,) if len(sa) > 1 else (k,)
    sb = sb[:-2] + (k,) + sb[-1:] if len(sb) > 1 else (k,)
    a, b = _rand(sa, seed), _rand(sb, seed + 1)
    try:
        want = np.matmul(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="matmul"):
            E.matmul(a, b)
        return
    got = E.matmul(a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(sa=shape_st, sb=shape_st, seed=st.integers(0, 100))
def test_dot_inner_outer_vdot_kron(sa, sb, seed):
    a, b = _rand(sa, seed), _rand(sb, seed + 1)
    for name in ("dot", "inner"):
        try:
            want = getattr(np, name)(a, b)
        except ValueError:
            with pytest.raises(ValueError):
                getattr(E, name)(a, b)
            continue
        got = getattr(E, name)(a, b)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(E.outer(a, b), np.outer(a, b), rtol=1e-6)
    np.testing.assert_allclose(jnp.kron(a, b), np.kron(a, b), rtol=1e-6)
    if a.size == b.size:
        np.testing.assert_allclose(E.vdot(a, b), np.vdot(a, b), rtol=1e-5, atol=1e-5)


def test_vdot_conjugates_and_vecdot():
    a = (_rand((3,), 1) + 1j * _rand((3,), 2)).astype(np.complex64)
    b = (_rand((3,), 3) + 1j * _rand((3,), 4)).astype(np.complex64)
    np.testing.assert_allclose(E.vdot(a, b), np.vdot(a, b), rtol=1e-5)
    x, y = _rand((2, 1, 3), 5), _rand((4, 3), 6)
    np.testing.assert_allclose(E.vecdot(x, y), np.sum(x * y, -1), rtol=1e-5)
    np.testing.assert_allclose(E.vecdot(_rand((3, 2), 7), _rand((3, 2), 8), axis=0),
                               np.sum(_rand((3, 2), 7) * _rand((3, 2), 8), 0), rtol=1e-5)


@pytest.mark.parametrize("sa,sb,axes", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((3, 2), (3, 4), (0, 0)),
    ((2, 3, 4), (4, 2), ((0, 2), (1, 0))),
])
def test_tensordot(sa, sb, axes):
    a, b = _rand(sa, 1), _rand(sb, 2)
    np.testing.assert_allclose(E.tensordot(a, b, axes), np.tensordot(a, b, axes), rtol=1e-5)


def test_tensordot_errors():
    with pytest.raises(ValueError, match="number of axes 3 must be between 0 and 2"):
        E.tensordot(_rand((2, 3)), _rand((3, 2)), 3)
    with pytest.raises(ValueError, match="shapes .* are not aligned"):
        E.tensordot(_rand((2, 3)), _rand((2, 3)), 1)
    with pytest.raises(ValueError, match="matmul: operands must not be scalars"):
        E.matmul(_rand(()), _rand((2,)))


@settings(max_examples=20, deadline=None)
@given(batch=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
       da=st.sampled_from([2, 3]), db=st.sampled_from([2, 3]), seed=st.integers(0, 100))
def test_cross(batch, da, db, seed):
    a, b = _rand(batch + (da,), seed), _rand(batch + (db,), seed + 1)
    np.testing.assert_allclose(jnp.cross(a, b), np.cross(a, b), rtol=1e-5, atol=1e-6)
    if batch:
        a2, b2 = np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)
        np.testing.assert_allclose(jnp.cross(a2, b2, axisa=0, axisb=0),
                                   np.cross(a2, b2, axisa=0, axisb=0), rtol=1e-5, atol=1e-6)
        if da == 3 or db == 3:
            np.testing.assert_allclose(jnp.cross(a2, b2, axis=0), np.cross(a2, b2, axis=0),
                                       rtol=1e-5, atol=1e-6)


def test_cross_errors_and_grad():
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        jnp.cross(_rand((4,)), _rand((3,)))
    with enable_x64():
        check_grads(jnp.cross, [_rand((2, 3), 1, np.float64), _rand((2, 3), 2, np.float64)],
                    order=1)
        check_grads(jnp.kron, [_rand((2, 2), 3, np.float64), _rand((3,), 4, np.float64)],
                    order=1)
