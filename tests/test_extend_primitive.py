"""A primitive defined the way libraries do (jax.extend.core.Primitive with an impl, an
abstract eval, a JVP, a transpose, a JAX-style batching rule and mlir.lower_fun) works
eagerly, under jit, grad and vmap; checked against NumPy and the analytic derivative."""

import numpy as np
import pytest

import minijax
import minijax.compat
import minijax.numpy as jnp


def _define(jax):
    from jax.extend.core import Primitive
    from jax.interpreters import ad, batching, mlir

    scale_p = Primitive("test_scale_sin")      # y = c * sin(x)

    def impl(x, *, c):
        return c * jnp.sin(x)

    scale_p.def_impl(impl)
    scale_p.def_abstract_eval(lambda a, *, c: jax.core.ShapedArray(a.shape, a.dtype))

    def jvp(primals, tangents, *, c):
        (x,), (t,) = primals, tangents
        return scale_p.bind(x, c=c), c * jnp.cos(x) * ad.instantiate_zeros(t)

    ad.primitive_jvps[scale_p] = jvp
    batching.primitive_batchers[scale_p] = lambda vals, dims, *, c: (
        scale_p.bind(vals[0], c=c), dims[0])
    mlir.register_lowering(scale_p, mlir.lower_fun(impl, multiple_results=False))
    return scale_p


def test_user_primitive_eager_jit_grad_vmap():
    with minijax.compat.installed():
        import jax
        p = _define(jax)
        x = np.linspace(-1, 1, 5).astype(np.float32)
        want = 3.0 * np.sin(x)
        np.testing.assert_allclose(p.bind(jnp.asarray(x), c=3.0), want, rtol=1e-6)
        np.testing.assert_allclose(jax.jit(lambda v: p.bind(v, c=3.0))(x), want, rtol=1e-6)
        g = jax.vmap(jax.grad(lambda v: p.bind(v, c=3.0)))(x)
        np.testing.assert_allclose(g, 3.0 * np.cos(x), rtol=1e-6)
        gj = jax.jit(jax.vmap(jax.grad(lambda v: p.bind(v, c=3.0))))(x)
        np.testing.assert_allclose(gj, 3.0 * np.cos(x), rtol=1e-6)


def test_mlir_rule_for_jax_builders_falls_back_to_impl_or_says_why():
    from minijax.core import Primitive, ShapedArray
    from minijax.interpreters import mlir

    with_impl = Primitive("test_twice")
    with_impl.def_impl(lambda x: x * 2)
    with_impl.def_abstract_eval(lambda a: ShapedArray(a.shape, a.dtype))
    mlir.register_lowering(with_impl, lambda ctx, x: [x], platform="cpu")
    np.testing.assert_allclose(minijax.jit(with_impl.bind)(jnp.arange(3.0)), [0, 2, 4])

    no_impl = Primitive("test_no_impl")
    no_impl.def_abstract_eval(lambda a: ShapedArray(a.shape, a.dtype))
    mlir.register_lowering(no_impl, lambda ctx, x: [x])
    with pytest.raises(Exception, match="MLIR builders"):
        minijax.jit(no_impl.bind)(jnp.arange(3.0))


def test_extend_core_helpers():
    from minijax.extend import core
    a = core.ShapedArray((3, 4), np.float32)
    assert core.mapped_aval(3, 0, a).shape == (4,)
    assert core.unmapped_aval(5, 1, a).shape == (3, 5, 4)
    assert core.primitives.add_p is minijax.lax.add_p
    closed = minijax.make_jaxpr(lambda x: x * 2 + 1)(1.0)
    assert float(core.jaxpr_as_fun(closed)(2.0)[0]) == 5.0
    seen = []
    minijax.jit(lambda x: seen.append(core.find_top_trace([x, 1.0])) or x)(1.0)
    assert seen[0] is not minijax.core.eval_trace
