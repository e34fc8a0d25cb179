"""Mutable array references (minijax.new_ref / Ref / minijax.ref.*), eagerly, under grad,
vmap and jit (refs as jit arguments are written back), with JAX 0.10.2's results and error
types hard-coded; and the supported subset of jax.experimental.hijax."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
import minijax.ref as R
from minijax.experimental import hijax


def test_get_set_index_and_typeof():
    r = minijax.new_ref(jnp.arange(3.0))
    assert str(minijax.typeof(r)) == "Ref{f32[3]}" and r.shape == (3,) and r.dtype == jnp.float32
    r[...] = jnp.ones(3)
    r[1] = 5.0  # JAX: a Python float takes the float ref's dtype
    np.testing.assert_array_equal(r[...], [1.0, 5.0, 1.0])
    assert float(r[1]) == 5.0
    assert float(R.swap(r, 0, 7.0)) == 1.0
    R.addupdate(r, (), jnp.ones(3))
    np.testing.assert_array_equal(R.get(r, ()), [8.0, 6.0, 2.0])
    np.testing.assert_array_equal(minijax.freeze(r), [8.0, 6.0, 2.0])


@pytest.mark.parametrize("value, what", [(np.ones(2, np.float32), "shape"),
                                         (np.ones((), np.float32), "shape"),
                                         (np.ones(3, np.int32), "dtype"),
                                         (np.ones(3, np.float16), "dtype"), (5, "dtype")])
def test_writes_must_match_shape_and_dtype(value, what):
    # JAX: ValueError "Invalid shape/dtype for `swap`" (no broadcasting, no casting)
    r = minijax.new_ref(jnp.zeros(3))
    with pytest.raises(ValueError, match=f"Invalid {what} for `swap`"):
        r[...] = value


def test_jit_discharges_ref_arguments():
    r = minijax.new_ref(jnp.arange(3.0))

    @minijax.jit
    def f(r, x):
        r[...] += x
        return r[...] * 2

    np.testing.assert_array_equal(f(r, 1.0), [2.0, 4.0, 6.0])  # JAX's values
    np.testing.assert_array_equal(r[...], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f(r, 1.0), [4.0, 6.0, 8.0])  # cached program, new value
    np.testing.assert_array_equal(r[...], [2.0, 3.0, 4.0])


def test_same_ref_passed_twice_is_one_ref():
    r = minijax.new_ref(jnp.float32(1.0))

    @minijax.jit
    def f(a, b):
        a[...] = a[...] + 1.0
        return b[...]

    assert float(f(r, r)) == 2.0 and float(r[...]) == 2.0


def test_grad_through_refs_created_inside():
    def g(x):
        r = minijax.new_ref(x)
        r[...] = r[...] * x
        return minijax.freeze(r).sum()

    x = jnp.arange(3.0)
    np.testing.assert_array_equal(minijax.grad(g)(x), [0.0, 2.0, 4.0])  # JAX: 2x
    np.testing.assert_array_equal(minijax.jit(minijax.grad(g))(x), [0.0, 2.0, 4.0])


def test_outer_ref_read_under_grad_and_vmap():
    rr = minijax.new_ref(2.0)
    assert float(minijax.grad(lambda x: x * rr[...])(3.0)) == 2.0
    np.testing.assert_array_equal(minijax.vmap(lambda x: x * rr[...])(jnp.ones(2)), [2.0, 2.0])


def test_closed_over_ref_in_jit_is_an_error_that_says_what_to_do():
    rr = minijax.new_ref(2.0)
    with pytest.raises(TypeError, match="Pass the Ref to the jit-ed function as an argument"):
        minijax.jit(lambda x: x * rr[...])(3.0)


def test_returning_a_ref_from_jit_is_an_error():
    r = minijax.new_ref(1.0)
    with pytest.raises(ValueError, match="cannot be returned"):
        minijax.jit(lambda r: r)(r)


class _Double(hijax.HiPrimitive):
    def impl(self, x):
        return ("eager", x * 2)

    def to_lojax(self, x):
        return x * 2


def test_hiprimitive_runs_impl_eagerly_and_to_lojax_under_transformations():
    p = _Double("double")
    assert p.bind(3.0)[0] == "eager"
    assert float(minijax.jit(p.bind)(3.0)) == 6.0
    assert float(minijax.grad(p.bind)(3.0)) == 2.0


def test_hitype_registration_and_helpers():
    class Box:
        pass

    class AbstractBox(hijax.HiType):
        pass

    hijax.register_hitype(Box, lambda b: AbstractBox())
    assert isinstance(minijax.typeof(Box()), AbstractBox)
    z = hijax.instantiate_zeros(hijax.Zero(minijax.core.ShapedArray((2,), np.float32)))
    np.testing.assert_array_equal(z, [0.0, 0.0])
    with pytest.raises(TypeError):
        hijax.control_flow_allowed_effects.add_type(int)
    with pytest.raises(NotImplementedError, match="quasi-dynamic"):
        hijax.cur_qdd(Box())


def test_typeof_of_arrays_and_keys():
    assert minijax.typeof(jnp.ones((2, 3))) == minijax.core.ShapedArray((2, 3), np.float32)
    assert minijax.typeof(minijax.random.key(0)).shape == ()


def test_refs_hold_typed_prng_keys():
    key = minijax.random.key(0)
    r = minijax.new_ref(key)
    assert r.shape == () and str(minijax.typeof(r)).startswith("Ref{key<fry>")
    r[...] = minijax.random.split(key)[0]
    np.testing.assert_array_equal(minijax.random.key_data(r[...]),
                                  minijax.random.key_data(minijax.random.split(key)[0]))
    with pytest.raises(ValueError, match="Invalid type"):
        r[...] = jnp.zeros(2)
