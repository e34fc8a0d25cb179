"""Write HLO text printed by real JAX for a dozen programs, with inputs and JAX's outputs.

    python tests/data/make_jax_hlo.py        # needs jax; rewrites tests/data/jax_hlo/

For each program NAME this writes NAME.hlo (`jax.jit(f).lower(*args).as_text(dialect="hlo")`)
and NAME.npz (arrays arg0, arg1, ... and JAX's results out0, out1, ...), which
tests/test_hlo_from_jax.py parses and runs with minijax even when JAX is not installed.
PROGRAMS is also imported by that test to compare against a live JAX.
"""

from __future__ import annotations

import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_hlo")
NAMES = ("fused_sum", "softmax", "mlp_layer", "conv", "fori_loop", "cond", "scan", "gather",
         "scatter_add", "sort", "argmax", "cumsum")


def _programs(jax, jnp, lax):
    """name -> (function, example arguments). Built lazily so importing needs no jax."""
    rng = np.random.default_rng(0)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def fori(n, x):
        return lax.fori_loop(0, n, lambda i, c: c * 0.5 + i.astype(c.dtype), x)

    def scan(xs):
        def step(c, x):
            c = c + x
            return c, c * x
        return lax.scan(step, jnp.zeros(xs.shape[1:], xs.dtype), xs)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))

    return {
        "fused_sum": (lambda x, y, z: jnp.sum(x + y * z), (f32(37), f32(37), f32(37))),
        "softmax": (lambda x: jax.nn.softmax(x, axis=-1), (f32(4, 9),)),
        "mlp_layer": (lambda x, w, b: jax.nn.relu(x @ w + b), (f32(5, 7), f32(7, 3), f32(3))),
        "conv": (conv, (f32(2, 3, 6, 5), f32(4, 3, 3, 3))),
        "fori_loop": (fori, (np.int32(5), f32(6))),
        "cond": (lambda p, x: lax.cond(p > 0, jnp.sin, jnp.cos, x), (np.int32(1), f32(5))),
        "scan": (scan, (f32(6, 3),)),
        "gather": (lambda x, i: x[i], (f32(7, 3), np.array([0, 6, 2, 2], np.int32))),
        "scatter_add": (lambda x, i, u: x.at[i].add(u),
                        (f32(7, 3), np.array([1, 1, 5], np.int32), f32(3, 3))),
        "sort": (lambda x: jnp.sort(x, axis=-1), (f32(3, 8),)),
        "argmax": (lambda x: jnp.argmax(x, axis=1), (f32(4, 6),)),
        "cumsum": (lambda x: jnp.cumsum(x, axis=0), (f32(9, 2),)),
    }


def programs():
    """The programs, built with the installed jax (ImportError when there is none)."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    return _programs(jax, jnp, lax)


def hlo_text(fn, args) -> str:
    """What JAX prints for `jax.jit(fn).lower(*args).as_text(dialect="hlo")`."""
    import jax
    return jax.jit(fn).lower(*args).as_text(dialect="hlo")


def main() -> None:
    """Regenerate every fixture."""
    import jax
    os.makedirs(HERE, exist_ok=True)
    for name, (fn, args) in programs().items():
        outs = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
        with open(os.path.join(HERE, f"{name}.hlo"), "w") as f:
            f.write(hlo_text(fn, args))
        arrays = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        arrays.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
        np.savez(os.path.join(HERE, f"{name}.npz"), **arrays)
        print(f"wrote {name}.hlo ({len(args)} args, {len(outs)} outputs)")


if __name__ == "__main__":
    main()
