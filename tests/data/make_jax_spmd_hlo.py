"""Write HLO text of pmap/shard_map programs printed by real JAX over 4 forced host devices.

    python tests/data/make_jax_spmd_hlo.py      # needs jax; rewrites tests/data/jax_spmd/

pmap_collectives*.hlo: every collective inside pmap (before and after XLA's optimization);
shard_map*.hlo: a 2x2-mesh matmul with psum over one axis and all_gather over the other.
tests/test_hlo_collectives.py parses them, round-trips them and runs the compiled ones on
4 minijax CPU devices.
"""

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import numpy as np  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jax_spmd")


def pmap_collectives(lax, jnp, v):
    """The program stored in pmap_collectives*.hlo (also run by the test with minijax)."""
    return (lax.psum(v, "i"), lax.pmax(v, "i"), lax.all_gather(v, "i"),
            lax.all_gather(v, "i", tiled=True),
            lax.psum_scatter(jnp.tile(v, 4), "i", tiled=True),
            lax.ppermute(v, "i", [(j, (j + 1) % 4) for j in range(4)]),
            lax.all_to_all(v.reshape(4, -1), "i", 0, 0), lax.axis_index("i"),
            lax.pmin(v, "i"), lax.pmean(v, "i"))


def main():
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
    os.makedirs(HERE, exist_ok=True)
    x = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    pf = jax.pmap(lambda v: pmap_collectives(lax, jnp, v), axis_name="i")
    with open(os.path.join(HERE, "pmap_collectives.hlo"), "w") as f:
        f.write(pf.lower(x).as_text(dialect="hlo"))
    with open(os.path.join(HERE, "pmap_collectives_compiled.hlo"), "w") as f:
        f.write(pf.lower(x).compile().as_text())
    mesh = jax.make_mesh((2, 2), ("x", "y"))

    def g(a, b):
        s = lax.psum(a @ b, "y")
        return lax.all_gather(s, "x", tiled=True), lax.axis_index("x")[None]
    sm = jax.jit(jax.shard_map(g, mesh=mesh, in_specs=(P("x", "y"), P("y", None)),
                               out_specs=(P(None, None), P("x")), check_vma=False))
    a = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(mesh, P("x", "y")))
    b = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("y", None)))
    with open(os.path.join(HERE, "shard_map.hlo"), "w") as f:
        f.write(sm.lower(a, b).as_text(dialect="hlo"))
    with open(os.path.join(HERE, "shard_map_compiled.hlo"), "w") as f:
        f.write(sm.lower(a, b).compile().as_text())


if __name__ == "__main__":
    main()
