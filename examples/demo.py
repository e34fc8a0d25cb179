"""A five-minute tour of minijax: NumPy API, jaxprs, grad, vmap, jit and its compiler."""

import time

import numpy as np

import minijax as jax
import minijax.numpy as jnp


def banner(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)))


def timed(fn, *args, repeat: int = 20) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    print(f"minijax {jax.__version__} on {jax.devices()}")

    banner("NumPy API on immutable arrays, JAX's dtype rules")
    x = jnp.arange(6.0).reshape(2, 3)
    print("x =", x)
    print("x * 2.0 stays float32:", (x * 2.0).dtype,
          "| int32 + 1.5 ->", (jnp.arange(3) + 1.5).dtype)
    print("x.at[0, 1].set(9.0) =", x.at[0, 1].set(9.0))

    banner("Tracing: make_jaxpr")

    def loss(w, inputs, targets):
        predictions = jnp.tanh(inputs @ w)
        return jnp.mean((predictions - targets) ** 2)
    w = jnp.ones((3, 2)) * 0.1
    inputs = jnp.arange(12.0).reshape(4, 3) / 10
    targets = jnp.ones((4, 2))
    print(jax.make_jaxpr(loss)(w, inputs, targets))

    banner("grad, checked against finite differences")
    g = jax.grad(loss)(w, inputs, targets)
    eps = 1e-3
    w_np = np.asarray(w, np.float64)
    bumped = w_np.copy()
    bumped[0, 0] += eps
    fd = (float(loss(jnp.asarray(bumped, jnp.float32), inputs, targets))
          - float(loss(w, inputs, targets))) / eps
    print(f"d loss / d w[0,0]: grad {float(g[0, 0]):.5f}, finite difference {fd:.5f}")

    banner("vmap: per-example gradients")
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, inputs[:, None],
                                                                  targets[:, None])
    print("per-example gradient shape:", per_example.shape)

    banner("jit: jnp.sum(x + y * z) becomes one fused kernel")
    n = 1 << 22
    rng = np.random.default_rng(0)
    xs = [jnp.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(3)]

    def fused(x, y, z):
        return jnp.sum(x + y * z)
    compiled = jax.jit(fused).lower(*xs).compile()
    text = compiled.as_text()
    print(text[text.index("ENTRY"):])
    print("memory:", compiled.memory_analysis())
    jitted = jax.jit(fused)
    xs_np = [np.asarray(a) for a in xs]
    t_np = timed(lambda a, b, c: np.sum(a + b * c), *xs_np)
    t_mj = timed(jitted, *xs)
    print(f"NumPy {t_np * 1e3:.2f} ms | minijax.jit {t_mj * 1e3:.2f} ms "
          f"({t_np / t_mj:.1f}x NumPy) on {jax.default_backend()}")
    print("same answer:", np.allclose(float(jitted(*xs)), float(np.sum(
        xs_np[0].astype(np.float64) + xs_np[1].astype(np.float64) * xs_np[2])), rtol=1e-4))


if __name__ == "__main__":
    main()
