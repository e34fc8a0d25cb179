"""Write XLA-printed modules (JAX 0.10.2) with inputs and JAX's outputs for test_hlo_text_language.

    python tests/data/hlo_text/make.py      # needs jax
Each NAME.hlo is `jax.jit(f).lower(*a).as_text(dialect="hlo")` (NAME_opt.hlo: the
XLA:CPU-optimized module, with fusions); NAME.npz holds arg0.. and JAX's out0...
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    progs = {
        "rfft_grad": (jax.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 2)), (x,)),
        "fft2": (lambda v: jnp.fft.fft2(v * 2.0), (x,)),
        "softplus_barrier": (lambda v: jax.lax.optimization_barrier(
            (jax.nn.softplus(v), v * 3))[0] + 1, (x,)),
    }
    for name, (f, args) in progs.items():
        lowered = jax.jit(f).lower(*args)
        outs = jax.jit(f)(*args)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        data = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        data.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
        np.savez(os.path.join(HERE, f"{name}.npz"), **data)
        with open(os.path.join(HERE, f"{name}.hlo"), "w") as fh:
            fh.write(lowered.as_text(dialect="hlo"))
        with open(os.path.join(HERE, f"{name}_opt.hlo"), "w") as fh:
            fh.write(lowered.compile().as_text())


if __name__ == "__main__":
    main()
