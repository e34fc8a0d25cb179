"""The public transformations' API surface, against JAX's documented behaviour: vmap's
in_axes/out_axes/axis_size/kwargs, grad's argnums/has_aux/allow_int/holomorphic, jacfwd/
jacrev/hessian/linearize/vjp with pytrees, symbolic zeros, and every error message."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp
from minijax import tree_util
from minijax.test_util import check_grads, check_vmap


def _rand(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _loop_vmap(f, args, in_axes, size):
    """Reference: call f on each slice (per-argument int axis or None) and stack."""
    outs = []
    for i in range(size):
        sliced = [a if ax is None else np.take(np.asarray(a), i, axis=ax)
                  for a, ax in zip(args, in_axes, strict=True)]
        outs.append(f(*sliced))
    return tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


# --------------------------------------------------------------------------- vmap


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=3),
       in_seed=st.integers(0, 100), out_seed=st.integers(0, 100), neg=st.booleans())
def test_vmap_random_in_and_out_axes_match_loop(shape, in_seed, out_seed, neg):
    in_ax = in_seed % len(shape) - (len(shape) if neg else 0)
    shape[in_ax] = max(shape[in_ax], 1)  # the loop reference needs one element to stack
    x = _rand(shape, 1)
    y = _rand(shape, 2)
    out_ax = out_seed % len(shape) - (len(shape) if neg else 0)

    def f(a, b):
        return jnp.tanh(a) * b + jnp.sum(a)
    check_vmap(f, (x, y), in_axes=(in_ax, in_ax), out_axes=out_ax, atol=1e-5, rtol=1e-5)


def test_vmap_unmapped_argument_and_zero_size_batch():
    w = _rand((3,), 3)
    xs = _rand((4, 3), 4)
    check_vmap(lambda w, x: jnp.dot(w, x), (w, xs), in_axes=(None, 0), atol=1e-5)
    empty = minijax.vmap(lambda x: x * 2.0)(jnp.zeros((0, 3)))
    assert empty.shape == (0, 3)


def test_vmap_pytree_prefixes_for_in_and_out_axes():
    def f(d, t):
        return {"x": d["a"] * t[0] + d["b"], "y": t[1] * 2.0, "z": (d["b"], t[0])}
    d = {"a": _rand((3, 2), 5), "b": _rand((2,), 6)}
    t = (_rand((2, 3), 7), np.float32(5.0))
    out = minijax.vmap(f, in_axes=({"a": 0, "b": None}, (1, None)),
                       out_axes={"x": 1, "y": None, "z": (None, -1)})(d, t)
    assert out["x"].shape == (2, 3)
    for i in range(3):
        ref = f({"a": d["a"][i], "b": d["b"]}, (t[0][:, i], t[1]))
        np.testing.assert_allclose(out["x"][:, i], ref["x"], rtol=1e-6)
        np.testing.assert_allclose(out["z"][1][:, i], ref["z"][1])
    np.testing.assert_allclose(out["y"], 10.0)
    np.testing.assert_allclose(out["z"][0], d["b"])
    # A list of in_axes is accepted as a tuple; a None leaf inside a tuple argument.
    out2 = minijax.vmap(lambda p: p[0] + p[1], in_axes=[(0, None)])((jnp.ones((4, 2)),
                                                                      jnp.arange(2.0)))
    np.testing.assert_allclose(out2, np.ones((4, 2)) + np.arange(2.0))


def test_vmap_axis_size_kwargs_and_spmd_axis_name():
    out = minijax.vmap(lambda: jnp.ones(2), axis_size=3)()
    assert out.shape == (3, 2)
    out = minijax.vmap(lambda x: x, in_axes=None, axis_size=2)(jnp.arange(3.0))
    np.testing.assert_allclose(out, np.tile(np.arange(3.0), (2, 1)))
    # Keyword arguments are mapped over axis 0, as in JAX.
    out = minijax.vmap(lambda x, y: x + y, in_axes=(None,))(jnp.ones(3), y=jnp.arange(3.0))
    np.testing.assert_allclose(out, np.ones((3, 3)) + np.arange(3.0)[:, None])
    out = minijax.vmap(lambda x, scale: x * scale, spmd_axis_name="data")(
        jnp.ones((2, 3)), scale=jnp.array([1.0, 2.0]))
    np.testing.assert_allclose(out, [[1, 1, 1], [2, 2, 2]])


def test_vmap_of_python_scalar_output_and_constant_output():
    out = minijax.vmap(lambda x: 3.0)(jnp.ones(4))
    np.testing.assert_allclose(out, np.full(4, 3.0))
    out = minijax.vmap(lambda x: (x, jnp.zeros(2)), out_axes=(0, 1))(jnp.ones(4))
    assert out[1].shape == (2, 4)


def test_vmap_errors():
    vm = minijax.vmap
    x = jnp.ones(3)
    with pytest.raises(TypeError, match=r"vmap in_axes must be an int, None, or a tuple of "
                                        r"entries corresponding to the positional arguments "
                                        r"passed to the function, but got \{'a': 0\}\."):
        vm(lambda x: x, in_axes={"a": 0})
    with pytest.raises(TypeError, match=r"vmap in_axes must be an int, None, or \(nested\) "
                                        r"container with those types as leaves, but got "
                                        r"\(0, 1\.5\)\."):
        vm(lambda x: x, in_axes=(0, 1.5))
    with pytest.raises(TypeError, match=r"vmap out_axes must be an int, None, or \(nested\) "
                                        r"container with those types as leaves, but got "
                                        r"a\."):
        vm(lambda x: x, out_axes="a")
    with pytest.raises(ValueError, match=r"but got len\(in_axes\)=2, len\(args\)=1"):
        vm(lambda x: x, in_axes=(0, 0))(x)
    with pytest.raises(ValueError, match=r"vmap was requested to map its argument along axis "
                                         r"1, which implies that its rank should be at least "
                                         r"2, but is only 1 \(its shape is \(3,\)\)"):
        vm(lambda x: x, in_axes=1)(x)
    with pytest.raises(ValueError, match=r"along axis -2, which implies that its rank should "
                                         r"be at least 2"):
        vm(lambda x: x, in_axes=-2)(x)
    with pytest.raises(ValueError, match="vmap must have at least one non-None value in "
                                         "in_axes"):
        vm(lambda x: x, in_axes=None)(x)
    with pytest.raises(ValueError, match="vmap must have at least one non-None value"):
        vm(lambda: 1.0)()
    msg = (r"vmap got inconsistent sizes for array axes to be mapped:\n"
           r"  \* argument x of type f32\[3\] with mapped axis 0 has size 3\n"
           r"  \* argument y\['b'\] of type f32\[2,4\] with mapped axis 1 has size 4")
    with pytest.raises(ValueError, match=msg):
        vm(lambda x, y: x, in_axes=(0, {"b": 1}))(x, {"b": jnp.ones((2, 4))})
    with pytest.raises(ValueError, match=r"\* axis_size=4 was given"):
        vm(lambda x: x, axis_size=4)(x)
    with pytest.raises(ValueError, match="vmap has mapped output but out_axes is None"):
        vm(lambda x: x, out_axes=None)(x)
    with pytest.raises(ValueError, match=r"vmap has mapped output \(axis_name='i'\) but "
                                         r"out_axes is None"):
        vm(lambda x: x, out_axes=None, axis_name="i")(x)
    with pytest.raises(ValueError, match=r"vmap out_axes=2 is out of bounds for an output of "
                                         r"rank 0"):
        vm(lambda x: x, out_axes=2)(x)
    with pytest.raises(ValueError, match=r"vmap in_axes specification must be a tree prefix "
                                         r"of the corresponding value, got specification "
                                         r"\(\{'a': 0\},\) for value tree"):
        vm(lambda d: d, in_axes=({"a": 0},))({"b": x})
    with pytest.raises(ValueError, match=r"vmap out_axes specification must be a tree prefix "
                                         r"of the corresponding value, got specification "
                                         r"\(0, 0, 0\)"):
        vm(lambda x: (x, x), out_axes=(0, 0, 0))(x)
    with pytest.raises(TypeError, match="vmap axis_size must be a non-negative int"):
        vm(lambda x: x, axis_size=-1)


# --------------------------------------------------------------------------- grad


def test_grad_argnums_int_tuple_and_negative():
    def f(x, y, z):
        return jnp.sum(x * y) + z ** 2
    x, y = _rand((3,), 1), _rand((3,), 2)
    z = np.float32(1.5)
    gx = minijax.grad(f)(x, y, z)
    np.testing.assert_allclose(gx, y, rtol=1e-6)
    gy, gz = minijax.grad(f, argnums=(1, 2))(x, y, z)
    np.testing.assert_allclose(gy, x, rtol=1e-6)
    np.testing.assert_allclose(gz, 3.0)
    (gz2,) = minijax.grad(f, argnums=(-1,))(x, y, z)
    np.testing.assert_allclose(gz2, 3.0)
    val, (gx2, gy2) = minijax.value_and_grad(f, argnums=(0, 1))(x, y, z)
    np.testing.assert_allclose(val, np.sum(x * y) + 2.25, rtol=1e-6)
    np.testing.assert_allclose(gx2, y, rtol=1e-6)


def test_grad_pytree_arguments_and_kwargs():
    params = {"w": _rand((2, 3), 3), "b": [_rand((3,), 4)]}
    x = _rand((2,), 5)

    def loss(p, x, *, scale):
        return scale * jnp.sum(jnp.tanh(x @ p["w"] + p["b"][0]))
    g = minijax.grad(loss)(params, x, scale=2.0)
    assert tree_util.tree_structure(g) == tree_util.tree_structure(params)
    h = np.tanh(x @ params["w"] + params["b"][0])
    db = 2.0 * (1 - h ** 2)
    np.testing.assert_allclose(g["b"][0], db, rtol=1e-5)
    np.testing.assert_allclose(g["w"], np.outer(x, db), rtol=1e-5)


def test_grad_has_aux_returns_concrete_aux():
    def f(x):
        return jnp.sum(x ** 2), {"sq": x * 3.0, "n": 7}
    g, aux = minijax.grad(f, has_aux=True)(jnp.arange(3.0))
    np.testing.assert_allclose(g, [0.0, 2.0, 4.0])
    assert isinstance(aux["sq"], minijax.Array)  # no tracer leaks out
    np.testing.assert_allclose(aux["sq"], [0.0, 3.0, 6.0])
    assert aux["n"] == 7
    (v, aux2), g2 = minijax.value_and_grad(f, has_aux=True)(jnp.arange(3.0))
    np.testing.assert_allclose(v, 5.0)
    np.testing.assert_allclose(aux2["sq"], aux["sq"])
    with pytest.raises(TypeError, match=r"has_aux=True requires the function to return a "
                                        r"pair \(output, auxiliary data\)"):
        minijax.grad(lambda x: x, has_aux=True)(1.0)


def test_grad_allow_int_gives_float0_zeros():
    g = minijax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    np.testing.assert_allclose(g[0], 3.0)
    assert g[1].dtype == minijax.api.float0 and g[1].shape == ()
    gx, gn = minijax.vmap(minijax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True))(
        jnp.ones(3), jnp.arange(3))
    np.testing.assert_allclose(gx, [0.0, 1.0, 2.0])
    assert gn.dtype == minijax.api.float0 and gn.shape == (3,)


def test_grad_complex_inputs_and_holomorphic():
    z = np.complex64(1 + 1j)
    np.testing.assert_allclose(minijax.grad(lambda z: z ** 2, holomorphic=True)(z), 2 * z)
    # f(z) = |z|^2 has JAX's gradient conj(2 z) = 2 x - 2 i y.
    np.testing.assert_allclose(minijax.grad(lambda z: jnp.abs(z) ** 2)(np.complex64(3 + 4j)),
                               6 - 8j, rtol=1e-6)
    np.testing.assert_allclose(minijax.jacfwd(lambda z: z ** 3, holomorphic=True)(z),
                               3 * z ** 2, rtol=1e-6)
    np.testing.assert_allclose(minijax.jacrev(lambda z: z ** 3, holomorphic=True)(z),
                               3 * z ** 2, rtol=1e-6)


def test_grad_errors():
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions\. "
                                        r"Output had shape: \(3,\)\."):
        minijax.grad(lambda x: x * 2)(jnp.ones(3))
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions\. "
                                        r"Output was \("):
        minijax.grad(lambda x: (x, x))(1.0)
    with pytest.raises(TypeError, match=r"grad requires real- or complex-valued inputs \(input "
                                        r"dtype that is a sub-dtype of np\.inexact\), but got "
                                        r"int32\. If you want to use Boolean- or integer-valued "
                                        r"inputs, use vjp or set allow_int to True\."):
        minijax.grad(lambda x: x * 1.0)(jnp.arange(1)[0])
    with pytest.raises(TypeError, match=r"but got bool\. If you want"):
        minijax.grad(lambda x: 1.0)(True)
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs \(output dtype "
                                        r"that is a sub-dtype of np\.floating\), but got "
                                        r"int32\. For differentiation of functions with "
                                        r"integer outputs, use jax\.vjp directly\."):
        minijax.grad(lambda x: jnp.int32(1))(1.0)
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs .* but got "
                                        r"complex64\. For holomorphic differentiation, pass "
                                        r"holomorphic=True\."):
        minijax.grad(lambda z: z * 2)(np.complex64(1j))
    with pytest.raises(TypeError, match=r"grad with holomorphic=True requires inputs with "
                                        r"complex dtype, but got float32\."):
        minijax.grad(lambda x: x, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"grad with holomorphic=True requires outputs with "
                                        r"complex dtype, but got float32\."):
        minijax.grad(lambda z: jnp.real(z), holomorphic=True)(np.complex64(1j))
    # JAX: a positive argnums past the arguments is a TypeError, a negative one a ValueError.
    with pytest.raises(TypeError, match=r"grad: differentiating with respect to argnums=2 "
                                        r"requires at least 3 positional arguments"):
        minijax.grad(lambda x: x, argnums=2)(1.0)
    with pytest.raises(ValueError, match=r"grad: argnums -2 out of range for a function called "
                                         r"with 1 positional arguments"):
        minijax.grad(lambda x: x, argnums=-2)(1.0)


def test_unused_inputs_have_symbolic_zero_gradients():
    def f(x, y, z):
        return jnp.sum(jnp.sin(x) * 2.0) + 0.0 * jnp.sum(z)
    x, y = _rand((3,), 1), _rand((4,), 2)
    z = _rand((2,), 3)
    gx, gy = minijax.grad(f, argnums=(0, 1))(x, y, z)
    assert gy.shape == (4,) and gy.dtype == np.float32
    assert np.all(np.asarray(gy) == 0.0) and not np.signbit(np.asarray(gy)).any()
    jaxpr = minijax.make_jaxpr(minijax.grad(f, argnums=1))(x, y, z).jaxpr
    y_var = jaxpr.invars[1]
    assert all(y_var not in e.invars for e in jaxpr.eqns)
    # The gradient of y is materialized by one broadcast of 0.0 and nothing else touches it.
    (out_var,) = jaxpr.outvars
    producers = [e for e in jaxpr.eqns if out_var in e.outvars]
    assert [e.primitive.name for e in producers] == ["broadcast_in_dim"]
    # The linearized function of an unused input is a constant zero (no equations at all).
    _, f_lin = minijax.linearize(lambda a, b: jnp.sin(a), x, y)
    lin = minijax.make_jaxpr(lambda tb: f_lin(jnp.zeros(3), tb))(y).jaxpr
    assert all(lin.invars[0] not in e.invars for e in lin.eqns)


# --------------------------------------------------------------------------- jacobians


def _fd_jacobian(f, x, eps=1e-6):
    """Central-difference Jacobian of f: R^n -> R^m (flattened), float64."""
    x = np.asarray(x, np.float64)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = eps
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e), np.float64) - np.asarray(f(x - e), np.float64))
                    .ravel() / (2 * eps))
    return np.stack(cols, axis=-1)


def test_jacobians_match_finite_differences(x64):
    def f(x):
        return jnp.stack([jnp.sin(x[0]) * x[1], x[0] ** 2 * x[2], jnp.exp(x[1] - x[2])]) \
            .reshape(3, 1) * jnp.array([1.0, 2.0])
    x = np.array([0.3, -1.2, 0.7])
    want = _fd_jacobian(f, x).reshape(3, 2, 3)
    np.testing.assert_allclose(minijax.jacfwd(f)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(minijax.jacrev(f)(x), want, rtol=1e-6, atol=1e-8)

    def g(x):
        return jnp.sum(jnp.sin(x) * x[::-1]) + jnp.prod(x)
    h_want = _fd_jacobian(minijax.grad(g), x)
    np.testing.assert_allclose(minijax.hessian(g)(x), h_want, rtol=1e-6, atol=1e-8)


def test_jacobians_of_pytrees_with_argnums_tuples():
    def f(x, y):
        return {"a": jnp.sin(x) * y[0], "b": jnp.sum(x ** 2) + y[1]}
    x = _rand((3,), 1)
    y = (_rand((3,), 2), np.float32(1.5))
    for jac in (minijax.jacfwd, minijax.jacrev):
        j = jac(f, argnums=(0, 1))(x, y)
        shapes = tree_util.tree_map(np.shape, j)
        assert shapes == {"a": ((3, 3), ((3, 3), (3,))), "b": ((3,), ((3,), ()))}
        np.testing.assert_allclose(j["a"][0], np.diag(np.cos(x) * y[0]), rtol=1e-5)
        np.testing.assert_allclose(j["a"][1][0], np.diag(np.sin(x)), rtol=1e-5)
        np.testing.assert_allclose(j["b"][0], 2 * x, rtol=1e-5)
        np.testing.assert_allclose(j["b"][1][1], 1.0)
        single = jac(f)(x, y)
        assert tree_util.tree_map(np.shape, single) == {"a": (3, 3), "b": (3,)}


def test_hessian_of_pytree_and_has_aux():
    p = {"w": np.array([1.0, 2.0], np.float32), "b": np.float32(2.0)}
    h = minijax.hessian(lambda p: jnp.sum(p["w"] ** 3) * p["b"])(p)
    np.testing.assert_allclose(h["w"]["w"], np.diag(6 * p["w"] * p["b"]))
    np.testing.assert_allclose(h["w"]["b"], 3 * p["w"] ** 2)
    np.testing.assert_allclose(h["b"]["b"], 0.0)
    for jac in (minijax.jacfwd, minijax.jacrev):
        j, aux = jac(lambda x: (x ** 2, {"c": x + 1}), has_aux=True)(jnp.arange(2.0))
        np.testing.assert_allclose(j, np.diag([0.0, 2.0]))
        np.testing.assert_allclose(aux["c"], [1.0, 2.0])


def test_jacobian_errors():
    with pytest.raises(TypeError, match=r"jacfwd requires real-valued inputs \(input dtype "
                                        r"that is a sub-dtype of np\.floating\), but got "
                                        r"int32\."):
        minijax.jacfwd(lambda x: x)(jnp.arange(2))
    with pytest.raises(TypeError, match=r"jacfwd with holomorphic=True requires inputs with "
                                        r"complex dtype, but got float32\."):
        minijax.jacfwd(lambda x: x, holomorphic=True)(jnp.ones(2))
    with pytest.raises(TypeError, match=r"jacrev requires real- or complex-valued inputs"):
        minijax.jacrev(lambda x: x * 1.0)(jnp.arange(2))
    with pytest.raises(TypeError, match=r"jacrev requires real-valued outputs .* but got "
                                        r"int32"):
        minijax.jacrev(lambda x: jnp.ones(2, jnp.int32))(jnp.ones(2))


# --------------------------------------------------------------------------- jvp, linearize, vjp


def test_linearize_and_vjp_with_pytrees(x64):
    def f(p, x):
        return {"y": jnp.tanh(p["w"] @ x + p["b"]), "s": jnp.sum(x ** 2)}
    p = {"w": np.random.default_rng(1).standard_normal((2, 3)),
         "b": np.random.default_rng(2).standard_normal(2)}
    x = np.random.default_rng(3).standard_normal(3)
    tp = tree_util.tree_map(lambda a: np.ones_like(a) * 0.1, p)
    tx = np.linspace(-1, 1, 3)
    out, f_jvp = minijax.linearize(f, p, x)
    out2, tout = minijax.jvp(f, (p, x), (tp, tx))
    lin = f_jvp(tp, tx)
    for a, b in zip(tree_util.tree_leaves(lin), tree_util.tree_leaves(tout), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    np.testing.assert_allclose(out["y"], out2["y"])
    out3, vjp_fn = minijax.vjp(f, p, x)
    ct = {"y": np.array([1.0, -2.0]), "s": np.float64(0.5)}
    gp, gx = vjp_fn(ct)
    assert tree_util.tree_structure(gp) == tree_util.tree_structure(p)
    # <vjp(ct), t> == <ct, jvp(t)>
    lhs = sum(np.sum(np.asarray(a) * np.asarray(b)) for a, b in
              zip(tree_util.tree_leaves((gp, gx)), tree_util.tree_leaves((tp, tx)), strict=True))
    rhs = sum(np.sum(np.asarray(a) * np.asarray(b)) for a, b in
              zip(tree_util.tree_leaves(ct), tree_util.tree_leaves(tout), strict=True))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)
    check_grads(lambda w, b, x: f({"w": w, "b": b}, x), (p["w"], p["b"], x), order=2)


def test_has_aux_for_jvp_linearize_vjp():
    def f(x):
        return jnp.sin(x), {"aux": x * 2.0}
    x = jnp.arange(3.0)
    y, t, aux = minijax.jvp(f, (x,), (jnp.ones(3),), has_aux=True)
    np.testing.assert_allclose(t, np.cos(np.arange(3.0)), rtol=1e-6)
    assert isinstance(aux["aux"], minijax.Array)
    y, f_jvp, aux = minijax.linearize(f, x, has_aux=True)
    np.testing.assert_allclose(f_jvp(jnp.ones(3)), np.cos(np.arange(3.0)), rtol=1e-6)
    assert isinstance(aux["aux"], minijax.Array)
    y, vjp_fn, aux = minijax.vjp(f, x, has_aux=True)
    np.testing.assert_allclose(vjp_fn(jnp.ones(3))[0], np.cos(np.arange(3.0)), rtol=1e-6)
    np.testing.assert_allclose(aux["aux"], [0.0, 2.0, 4.0])


def test_jvp_linearize_vjp_errors():
    f = jnp.sin
    with pytest.raises(TypeError, match="jvp: primal and tangent arguments must be tuples or "
                                        "lists; found Array and Array"):
        minijax.jvp(f, jnp.ones(2), jnp.ones(2))
    with pytest.raises(TypeError, match="jvp: primal and tangent arguments must have the same "
                                        "tree structure"):
        minijax.jvp(lambda a, b: a, (1.0, 2.0), (1.0,))
    with pytest.raises(ValueError, match=r"jvp: primal and tangent shapes must match; got "
                                         r"primal f32\[2\] and tangent f32\[3\]"):
        minijax.jvp(f, (jnp.ones(2),), (jnp.ones(3),))
    _, f_jvp = minijax.linearize(f, jnp.ones(2))
    with pytest.raises(TypeError, match="linearized function called with tangents of "
                                        "structure"):
        f_jvp(jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match=r"linearized function called with a tangent of type "
                                         r"f32\[3\] for a primal of type f32\[2\]"):
        f_jvp(jnp.ones(3))
    _, vjp_fn = minijax.vjp(f, jnp.ones(2))
    with pytest.raises(ValueError, match=r"vjp: cotangent shape f32\[3\] does not match the "
                                         r"primal output f32\[2\]"):
        vjp_fn(jnp.ones(3))
    with pytest.raises(TypeError, match="vjp function called with a cotangent of structure"):
        vjp_fn((jnp.ones(2), jnp.ones(2)))
    with pytest.raises(TypeError, match="takes exactly one argument"):
        vjp_fn(jnp.ones(2), jnp.ones(2))


def test_eval_shape_of_transformations():
    out = minijax.eval_shape(minijax.vmap(minijax.grad(lambda x: jnp.sum(x ** 2))),
                             jnp.ones((5, 3)))
    assert out == minijax.ShapeDtypeStruct((5, 3), np.float32)
