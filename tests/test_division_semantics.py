"""Division by zero and integer powers follow JAX, eagerly, under jit and under vmap.

Expected values are JAX 0.10.2's (hard-coded, so CI needs no JAX); where jax is importable
the same cases are also compared against it live.
"""

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp

F_NUM = np.array([1., -1., 0., 7.5, -7.5, 5., np.inf], np.float32)
F_DEN = np.array([0., 0., 0., 2., 2., -np.inf, 0.], np.float32)
I_NUM = np.array([7, -7, 0, 5, -2147483648, -2147483648, 2147483647], np.int32)
I_DEN = np.array([0, 0, 0, -3, -1, 0, 0], np.int32)
U_NUM = np.array([7, 0, 255], np.uint8)
U_DEN = np.array([0, 0, 2], np.uint8)
I8_NUM = np.array([-128, 7, -7], np.int8)
I8_DEN = np.array([-1, 0, 0], np.int8)

# name -> (function of the two arguments, arguments, JAX's result)
CASES = {
    "float_floor_divide": (jnp.floor_divide, (F_NUM, F_DEN),
                           [np.inf, -np.inf, np.nan, 3., -4., -1., np.inf]),
    "float_floor_divide_neg_zero": (lambda x, y: x // y, (F_NUM[:3], np.float32(-0.)),
                                    [-np.inf, np.inf, np.nan]),
    "float_remainder": (jnp.remainder, (F_NUM, F_DEN),
                        [np.nan, np.nan, np.nan, 1.5, 0.5, -np.inf, np.nan]),
    "float_mod": (jnp.mod, (F_NUM, F_DEN), [np.nan, np.nan, np.nan, 1.5, 0.5, -np.inf, np.nan]),
    "float_fmod": (jnp.fmod, (F_NUM, F_DEN), [np.nan, np.nan, np.nan, 1.5, -1.5, 5., np.nan]),
    "float_divmod_q": (lambda x, y: jnp.divmod(x, y)[0], (F_NUM, F_DEN),
                       [np.inf, -np.inf, np.nan, 3., -4., -1., np.inf]),
    "float_divmod_r": (lambda x, y: jnp.divmod(x, y)[1], (F_NUM, F_DEN),
                       [np.nan, np.nan, np.nan, 1.5, 0.5, -np.inf, np.nan]),
    "float_true_divide": (jnp.true_divide, (F_NUM, F_DEN),
                          [np.inf, -np.inf, np.nan, 3.75, -3.75, -0., np.inf]),
    "float_floor_divide_halves": (jnp.floor_divide, (np.array([2.5, -2.5, 0.5], np.float32),
                                                     np.float32(1.)), [2., -3., 0.]),
    "int_floor_divide": (jnp.floor_divide, (I_NUM, I_DEN),
                         [-2, -2, -1, -2, -2147483648, -2, -2]),
    "int_remainder": (jnp.remainder, (I_NUM, I_DEN), [0, 0, 0, -1, 0, 0, 0]),
    "int_mod_operator": (lambda x, y: x % y, (I_NUM, I_DEN), [0, 0, 0, -1, 0, 0, 0]),
    "int_fmod": (jnp.fmod, (I_NUM, I_DEN), [0, 0, 0, 2, 0, 0, 0]),
    "int_divmod_q": (lambda x, y: jnp.divmod(x, y)[0], (I_NUM, I_DEN),
                     [-2, -2, -1, -2, -2147483648, -2, -2]),
    "int_divmod_r": (lambda x, y: jnp.divmod(x, y)[1], (I_NUM, I_DEN), [0, 0, 0, -1, 0, 0, 0]),
    "int_true_divide": (jnp.true_divide, (I_NUM, I_DEN),
                        [np.inf, -np.inf, np.nan, -5 / 3, 2147483648., -np.inf, np.inf]),
    "int_divide": (jnp.divide, (I_NUM, I_DEN),
                   [np.inf, -np.inf, np.nan, -5 / 3, 2147483648., -np.inf, np.inf]),
    "int_float_power": (jnp.float_power, (I_NUM[:5], I_DEN[:5]),
                        [1., 1., 1., 0.008, -4.656612873077393e-10]),
    "int8_floor_divide": (jnp.floor_divide, (I8_NUM, I8_DEN), [-128, -2, -2]),
    "int8_remainder": (jnp.remainder, (I8_NUM, I8_DEN), [0, 0, 0]),
    "uint8_floor_divide": (jnp.floor_divide, (U_NUM, U_DEN), [255, 255, 127]),
    "uint8_remainder": (jnp.remainder, (U_NUM, U_DEN), [0, 0, 1]),
    "uint8_fmod": (jnp.fmod, (U_NUM, U_DEN), [0, 0, 1]),
    # Integer powers: JAX's binary exponentiation over the exponent's low 6 bits.
    "int_power_array": (jnp.power, (np.array([2, 3, 0, -2], np.int32),
                                    np.array([3, -1, 0, 64], np.int32)),
                        [8, 2111105451, 1, 1]),
    "int_power_negative": (jnp.power, (np.array([7, -7, 0, 2], np.int32),
                                       np.array([-1, -2, -1, 65], np.int32)),
                           [1075496887, 767209169, 0, 2]),
    "int_pow_operator": (lambda x, y: x ** y, (np.array([2, 3, 0, -2], np.int32),
                                               np.array([3, -1, 0, 64], np.int32)),
                         [8, 2111105451, 1, 1]),
    "uint8_power": (jnp.power, (np.array([3, 0], np.uint8), np.array([5, 2], np.uint8)),
                    [243, 0]),
    "int8_power": (jnp.power, (np.array([3, -2], np.int8), np.array([5, 7], np.int8)),
                   [-13, -128]),
    "float_int_power": (jnp.power, (np.array([2., 0., 0., -1.5], np.float32),
                                    np.array([3, -1, 0, 64], np.int32)),
                        [8., np.inf, 1., 186140377088.]),
}


def _run(fn, args, mode):
    args = [jnp.asarray(a) for a in args]  # so that operators dispatch to minijax
    if mode == "eager":
        return fn(*args)
    if mode == "jit":
        return jax.jit(fn)(*args)
    # vmap over the leading axis of every array argument (scalars are broadcast).
    axes = tuple(0 if np.ndim(a) else None for a in args)
    return jax.vmap(fn, in_axes=axes)(*args)


@pytest.mark.parametrize("mode", ["eager", "jit", "vmap"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_division_like_functions_match_jax(name, mode):
    fn, args, want = CASES[name]
    got = np.asarray(_run(fn, args, mode))
    want = np.asarray(want, dtype=got.dtype)
    assert got.dtype == np.result_type(*[np.asarray(a) for a in args]) or \
        got.dtype.kind == "f", (name, got.dtype)
    np.testing.assert_array_equal(got, want, err_msg=f"{name} [{mode}]")


def test_against_live_jax():
    real = pytest.importorskip("jax")
    rjnp = pytest.importorskip("jax.numpy")
    names = {"floor_divide", "remainder", "mod", "fmod", "true_divide", "divide",
             "float_power", "power"}
    for name, (_fn, args, want) in CASES.items():
        matching = [n for n in names if f"_{n}_" in f"{name}_"]
        if not matching:
            continue
        fname = max(matching, key=len)
        with real.default_device(real.devices("cpu")[0]):
            ref = np.asarray(getattr(rjnp, fname)(*args))
        np.testing.assert_array_equal(np.asarray(getattr(jnp, fname)(*args)), ref, err_msg=name)
        np.testing.assert_array_equal(ref.astype(np.float64),
                                      np.asarray(want, ref.dtype).astype(np.float64),
                                      err_msg=f"hard-coded value of {name}")


def test_concrete_negative_integer_power_raises_type_error():
    x = jnp.arange(3)
    for fn in (lambda: jnp.power(x, -1), lambda: x ** -1, lambda: jnp.power(x, np.int32(-2)),
               lambda: jax.jit(lambda v: v ** -1)(x), lambda: jax.vmap(lambda v: v ** -1)(x)):
        with pytest.raises(TypeError, match="negative powers"):
            fn()


def test_traced_integer_exponent_under_vmap_matches_eager():
    base = jnp.array([2, 3, 0, -2])
    exps = jnp.array([3, -1, 0, 64])
    per_row = jax.vmap(lambda e: base ** e)(exps)
    loop = np.stack([np.asarray(jnp.power(base, jnp.full((4,), e))) for e in np.asarray(exps)])
    np.testing.assert_array_equal(np.asarray(per_row), loop)
    # JAX's values for the rows with exponent 3 and -1.
    np.testing.assert_array_equal(np.asarray(per_row)[:2],
                                  [[8, 27, 0, -8], [0, 2111105451, 0, 0]])
