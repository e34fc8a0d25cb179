"""The import hook (minijax.compat): `import jax` and its submodules give minijax's modules,
JAX's version attribute, JAX's library-author surface (jax.extend, jax.interpreters, jax.core)
and clean removal."""

import subprocess
import sys

import numpy as np
import pytest

import minijax
import minijax.compat
import minijax.numpy as mjnp


def test_modules_resolve_to_minijax_and_uninstall_cleans_up():
    with minijax.compat.installed():
        import jax
        import jax.extend.core
        import jax.interpreters.ad
        import jax.numpy as jnp
        from jax.experimental import sparse
        from jax.scipy import linalg
        assert jax.__version__ == minijax.compat.JAX_API_VERSION
        assert jax.__version_info__ == tuple(int(p) for p in jax.__version__.split("."))
        assert jax.minijax_version == minijax.__version__
        assert jnp is minijax.numpy and jax.jit is minijax.jit and jax.lax is minijax.lax
        assert jax.interpreters.ad.primitive_jvps is minijax.interpreters.ad.primitive_jvps
        assert jax.extend.core.Primitive is minijax.core.Primitive
        assert callable(linalg.solve_triangular)
        import jaxlib
        assert jaxlib.__version__ == minijax.compat.JAXLIB_API_VERSION
        with pytest.raises(ModuleNotFoundError):
            import jax.no_such_module  # noqa: F401
    assert not minijax.compat.is_installed()
    assert "jax.numpy" not in sys.modules or sys.modules["jax.numpy"] is not minijax.numpy
    # Attributes the hook put on minijax's modules (fallback children) are taken off again.
    assert getattr(minijax.experimental, "sparse", None) is not sparse
    assert getattr(minijax.scipy, "linalg", None) is not linalg or \
        linalg.__name__.startswith("minijax.scipy")


def test_real_jax_is_set_aside_and_restored():
    code = ("import jax, minijax.compat as c\n"
            "real = jax\n"
            "with c.installed():\n"
            "    import jax as j2\n"
            "    assert j2 is not real and j2.numpy.__name__ == 'minijax.numpy'\n"
            "import jax as j3\n"
            "assert j3 is real\n")
    pytest.importorskip("jax")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_jax_array_and_jnp_ndarray_cover_tracers():
    with minijax.compat.installed():
        import jax
        seen = []

        @jax.jit
        def f(x):
            seen.append((isinstance(x, jax.Array), isinstance(x, mjnp.ndarray)))
            return x

        f(mjnp.ones(2))
        assert seen == [(True, True)]
        assert isinstance(mjnp.ones(2), jax.Array) and not isinstance(np.ones(2), jax.Array)
        assert minijax.Array is not jax.Array  # the concrete class stays concrete


def test_internal_modules_libraries_import():
    with minijax.compat.installed():
        from jax._src import traceback_util
        from jax._src.core import trace_state_clean
        from jax._src.dtypes import TypePromotionError
        assert trace_state_clean()
        assert issubclass(TypePromotionError, ValueError)
        traceback_util.register_exclusion("/nonexistent/library/")
        import jax.api_util
        import jax.extend.linear_util as lu
        from jax.tree_util import tree_flatten
        args, in_tree = tree_flatten(((2.0,), {"y": 3.0}))
        wrapped, out_tree = jax.api_util.flatten_fun(lu.wrap_init(lambda x, y: (x * y,)),
                                                     in_tree)
        assert wrapped.call_wrapped(*args) == [6.0] and out_tree().num_leaves == 1
