"""Control flow (lax.cond / while_loop / fori_loop) details that differed from JAX 0.10.2
(a differential campaign on CPU), eagerly and under jit.

JAX's values are hard-coded; where real JAX is importable the same programs also run on it.
"""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax

try:
    import jax as real_jax
except Exception:  # pragma: no cover - CI has no JAX
    real_jax = None

needs_jax = pytest.mark.skipif(real_jax is None, reason="real JAX is not installed")


def _modes(fn):
    """fn eagerly and under jit."""
    return [fn, minijax.jit(fn)]


# JAX 0.10.2: a float predicate means pred != 0 (a NaN picks the true branch)
_FLOAT_PREDS = [(0.5, 1), (np.nan, 1), (-0.0, 2), (0.0, 2), (-3.0, 1)]


@pytest.mark.parametrize("pred,want", _FLOAT_PREDS)
@pytest.mark.parametrize("jit", [False, True])
def test_cond_takes_a_float_predicate(pred, want, jit):
    def fn(p):
        return lax.cond(p, lambda: jnp.int32(1), lambda: jnp.int32(2))
    assert int((minijax.jit(fn) if jit else fn)(np.float32(pred))) == want


def test_cond_still_refuses_a_complex_predicate():
    with pytest.raises(TypeError, match="Pred type"):
        lax.cond(np.complex64(1), lambda: 1, lambda: 2)


@pytest.mark.parametrize("fn", _modes(lambda: lax.while_loop(lambda c: c < 10,
                                                             lambda c: c + 1.5, 0)))
def test_weak_int_carry_promoted_by_the_body_becomes_strong(fn):
    # JAX 0.10.2 gives 10.5 as a strongly typed float32 (convert_element_type of the init),
    # so it then wins against a bfloat16 operand
    out = fn()
    assert out.dtype == np.float32 and not out.weak_type and float(out) == 10.5
    assert (out + jnp.ones((), jnp.bfloat16)).dtype == np.float32


def test_fori_loop_bound_dtypes_as_jax():
    body = lambda i, c: c + i  # noqa: E731
    with pytest.raises(TypeError, match="equal types"):
        lax.fori_loop(np.int16(0), np.int32(5), body, 0)
    # a Python int bound takes the other bound's dtype
    assert int(lax.fori_loop(0, np.int16(4), body, np.int16(0))) == 6
    # JAX 0.10.2: concrete float bounds are truncated (fori_loop(0.5, 3.7) runs i = 0, 1, 2)
    for fn in _modes(lambda: lax.fori_loop(0.5, 3.7, body, 0.0)):
        assert float(fn()) == 3.0


@pytest.mark.parametrize("fn", _modes(lambda: lax.fori_loop(
    np.int16(0), np.int16(3), lambda i, c: (c[0] + i, i), (0, np.int32(0)))))
def test_fori_loop_index_is_a_weak_python_int_with_concrete_bounds(fn):
    # JAX 0.10.2 starts the index from the Python int lower: a weakly typed int32
    total, last = fn()
    assert total.dtype == np.int32 and total.weak_type and int(total) == 3
    assert int(last) == 2


@needs_jax
def test_control_flow_types_against_jax():
    programs = [
        lambda L: L.while_loop(lambda c: c < 10, lambda c: c + 1.5, 0),
        lambda L: L.cond(np.float32(np.nan), lambda: 1.0, lambda: 2.0),
        lambda L: L.fori_loop(0, np.int16(4), lambda i, c: c + i, np.int16(0)),
        lambda L: L.fori_loop(0, 3, lambda i, c: c + i, 0),
    ]
    for prog in programs:
        want = prog(real_jax.lax)
        for fn in _modes(lambda prog=prog: prog(lax)):
            got = fn()
            assert got.dtype == want.dtype and got.weak_type == want.weak_type
            np.testing.assert_array_equal(got, want)
