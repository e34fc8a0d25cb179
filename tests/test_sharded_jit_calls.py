"""Calls of jit on split Arrays with keyword arguments, static arguments and donation:
they run partitioned over the arguments' mesh as positional calls do (JAX's output
shardings: hard-coded from JAX 0.10.2 with 2 forced host devices, compared live where jax
is importable), and donated Arrays (`donate_argnums` / `donate_argnames`, positional or
keyword) are deleted after the call when an output can use them, as JAX pairs them
(`is_deleted()` is True and using one raises JAX's RuntimeError); a donation no output can
use warns as JAX's and stays valid. The same on the partitioned path as on one device."""

import importlib.util
import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import Mesh, NamedSharding
from minijax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 2, reason="needs 2 CPU devices")

HAVE_JAX = importlib.util.find_spec("jax") is not None
MESH = Mesh(np.array(minijax.devices()[:2]), ("d",))
ROWS = NamedSharding(MESH, P("d"))
X = np.arange(48, dtype=np.float32).reshape(8, 6)


def _split(a=X):
    return minijax.device_put(a, ROWS)


def _mul(a, b):
    return a * b


def _scale(a, n):
    return a * n


def _kw_tree(a, n, *, c):
    return a * n + c["k"]


# name -> (call on minijax's jit (jit_fn, x) -> output, the same on JAX's, NumPy value).
# JAX 0.10.2 gives every one of these outputs P('d') on the argument's mesh.
CALLS = {
    "kwarg": (lambda jit, x: jit(_mul)(x, b=x), X * X),
    "only_kwargs": (lambda jit, x: jit(_mul)(a=x, b=x), X * X),
    "static_argnames_kw": (lambda jit, x: jit(_scale, static_argnames="n")(x, n=3), X * 3),
    "static_argnames_pos": (lambda jit, x: jit(_scale, static_argnames="n")(x, 3), X * 3),
    "static_argnums": (lambda jit, x: jit(_scale, static_argnums=1)(x, 3), X * 3),
    "static_and_kw_pytree": (
        lambda jit, x: jit(_kw_tree, static_argnums=1)(x, 2, c={"k": x}), X * 2 + X),
    "split_kwarg_only": (lambda jit, x: jit(_mul)(X, b=x), X * X),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_keyword_and_static_calls_run_partitioned(name):
    run, want = CALLS[name]
    out = run(minijax.jit, _split())
    np.testing.assert_array_equal(np.asarray(out), want)
    assert out.sharding == ROWS  # JAX: NamedSharding(mesh, P('d'))
    assert {s.device for s in out.addressable_shards} == set(MESH.devices.flat)
    for shard in out.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), want[shard.index])
    if HAVE_JAX:
        jax = pytest.importorskip("jax")
        jmesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("d",))
        jx = jax.device_put(X, jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec(
            "d")))
        assert tuple(run(jax.jit, jx).sharding.spec) == ("d",)


def test_static_argument_values_are_cached_apart():
    f = minijax.jit(_scale, static_argnames="n")
    x = _split()
    np.testing.assert_array_equal(np.asarray(f(x, n=2)), X * 2)
    np.testing.assert_array_equal(np.asarray(f(x, n=5)), X * 5)
    np.testing.assert_array_equal(np.asarray(f(x, 2)), X * 2)


def test_kwargs_with_in_shardings_raise_jax_error():
    f = minijax.jit(_mul, in_shardings=ROWS)
    with pytest.raises(ValueError, match="pjit does not support kwargs when in_shardings"):
        f(X, b=X)


def _deleted(x):
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[8,6\]"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="Array has been deleted"):
        x + 1


# name -> (call (x, y) -> output(s), which of x, y is deleted), as JAX 0.10.2 deletes them
# (checked live below): an output takes one donated input of its (per-device) shape.
DONATIONS = {
    "argnums": (lambda jit, x, y: jit(_mul, donate_argnums=1)(x, y), (False, True)),
    "argnums_by_keyword": (lambda jit, x, y: jit(_mul, donate_argnums=1)(x, b=y),
                           (False, True)),
    "argnames": (lambda jit, x, y: jit(_mul, donate_argnames="b")(x, b=y), (False, True)),
    "argnames_positional": (lambda jit, x, y: jit(_mul, donate_argnames="a")(x, y),
                            (True, False)),
    # One output: only the first donation is used; JAX warns about the other.
    "both_one_output": (lambda jit, x, y: jit(_mul, donate_argnums=(0, 1))(x, y),
                        (True, False)),
    "both_two_outputs": (lambda jit, x, y: jit(lambda a, b: (a * b, a + b),
                                               donate_argnums=(0, 1))(x, y)[0],
                         (True, True)),
    # The same number of elements in another shape is used too (JAX's second pass).
    "transposed": (lambda jit, x, y: jit(lambda a, b: (a * b).T, donate_argnums=1)(x, y),
                   (False, True)),
    "with_static": (lambda jit, x, y: jit(lambda a, n, b: a * n * b, static_argnums=1,
                                          donate_argnums=2)(x, 1, y), (False, True)),
}


@pytest.mark.parametrize("name", list(DONATIONS))
@pytest.mark.parametrize("where", ["split", "one_device"])
def test_donated_arrays_are_deleted(name, where):
    run, donated = DONATIONS[name]
    put = _split if where == "split" else (lambda a: minijax.device_put(a))
    x, y = put(X), put(X + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run(minijax.jit, x, y)
    want = X * (X + 1)
    np.testing.assert_array_equal(np.asarray(out), want if out.shape == (8, 6) else want.T)
    if where == "split":
        assert out.sharding == (ROWS if out.shape == (8, 6) else NamedSharding(MESH,
                                                                             P(None, "d")))
    for arr, gone in zip((x, y), donated, strict=True):
        if gone:
            _deleted(arr)
        else:
            assert not arr.is_deleted()
            np.testing.assert_array_equal(np.asarray(arr), X if arr is x else X + 1)
    if HAVE_JAX:
        jax = pytest.importorskip("jax")
        jmesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("d",))
        jrows = jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec("d"))
        jx, jy = jax.device_put(X, jrows), jax.device_put(X + 1, jrows)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(jax.jit, jx, jy)
        assert (jx.is_deleted(), jy.is_deleted()) == donated


def test_sharded_jit_donation_and_reuse_of_the_output():
    f = minijax.jit(lambda a, b: (a + b, b * 2), in_shardings=ROWS, out_shardings=ROWS,
                    donate_argnums=0)
    x, y = _split(), _split(X + 1)
    s, d = f(x, y)
    _deleted(x)
    assert not y.is_deleted()
    np.testing.assert_array_equal(np.asarray(s), X + X + 1)
    # A training-loop pattern: the output is donated back in the next step.
    for _ in range(3):
        s, _ = f(s, y)
    np.testing.assert_array_equal(np.asarray(s), X + 4 * (X + 1))
    assert s.sharding == ROWS


def test_plain_jit_of_split_pytree_donation():
    x = {"w": _split(), "v": _split(X * 2)}
    out = minijax.jit(lambda p: {"w": p["w"] * p["v"], "v": p["v"] + 1},
                      donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(out["w"]), X * X * 2)
    np.testing.assert_array_equal(np.asarray(out["v"]), X * 2 + 1)
    assert out["w"].sharding == ROWS
    _deleted(x["w"])
    assert x["v"].is_deleted()


@pytest.mark.parametrize("where", ["split", "one_device"])
def test_unusable_donation_warns_and_keeps_the_array(where):
    # JAX 0.10.2: a scalar output cannot take an (8, 6) buffer; a replicated (8, 6) output
    # cannot take a row-split argument's (4, 6) blocks. Both warn; nothing is deleted.
    x = _split() if where == "split" else minijax.device_put(X)
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: "
                      r"ShapedArray\(float32\[8,6\]\)"):
        # The sort's result has x's size: x's buffer must not be reused for it.
        out = minijax.jit(lambda a: jnp.sum(jnp.sort(-a, axis=0)[::2] * 2),
                          donate_argnums=0)(x)
    assert float(out) == float(np.sum(np.sort(-X, axis=0)[::2] * 2))
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), X)
    if where == "split":
        rep = NamedSharding(MESH, P())
        with pytest.warns(UserWarning, match="not usable"):
            y = minijax.jit(lambda a: a * 2, donate_argnums=0, out_shardings=rep)(x)
        assert y.sharding == rep and not x.is_deleted()
        np.testing.assert_array_equal(np.asarray(x), X)


def test_one_device_program_reuses_only_the_buffers_it_deletes():
    """The compiled program may reuse exactly the donated parameters the call deletes."""
    def params(f, *args):
        return f.lower(*args).compile()._entry.module.donated_params
    assert params(minijax.jit(_mul, donate_argnums=(0, 1)), X, X) == {0}
    assert params(minijax.jit(lambda a, b: (a * b, a + b), donate_argnums=(0, 1)), X, X) \
        == {0, 1}
    assert params(minijax.jit(_mul, donate_argnames="b"), X, X) == {1}
    assert params(minijax.jit(jnp.sum, donate_argnums=0), X) == set()
    # A pytree argument: only its leaves are donated, numbered as flat parameters.
    assert params(minijax.jit(lambda p, b: p["w"] * b, donate_argnums=1),
                  {"v": X[:1], "w": X}, X) == {2}
