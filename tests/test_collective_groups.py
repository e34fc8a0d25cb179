"""`axis_index_groups` for all_gather, psum_scatter and all_to_all (psum & co. are in
test_pmap_axis_index_groups.py): under pmap each group of axis indices runs its own
collective, lowered to XLA's all-gather / reduce-scatter / all-to-all with one replica group
per index group. As in JAX they work under pmap and shard_map (also inside an outer jit,
grad or vmap) and raise NotImplementedError under a plain vmap. References: NumPy per group,
and real JAX 0.10's values (pmap over 4 forced host devices), hard-coded."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.backends import get_backend
from minijax.backends.spmd import run_spmd
from minijax.compiler.driver import compile_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.options import CompileOptions
from minijax.sharding import Mesh
from minijax.sharding import PartitionSpec as P

pytestmark = pytest.mark.skipif(len(minijax.devices()) < 8, reason="needs 8 CPU devices")

X = np.arange(24.0, dtype=np.float32).reshape(4, 6)
GROUPS = [[[0, 2], [1, 3]], [[3, 1], [2, 0]], [[0], [1], [2], [3]], [[0, 1, 2, 3]],
          [[2, 0, 3, 1]]]


def _pmap(f):
    return minijax.pmap(f, axis_name="i", devices=minijax.devices()[:4])


def _where(groups, p):
    for g in groups:
        if p in g:
            return g, g.index(p)
    raise AssertionError(p)


# NumPy references: xs[p] is member p's operand.

def _np_all_gather(xs, groups, axis, tiled):
    out = []
    for p in range(len(xs)):
        g, _ = _where(groups, p)
        parts = [xs[q] for q in g]
        out.append(np.concatenate(parts, axis) if tiled else np.stack(parts, axis))
    return np.stack(out)


def _np_psum_scatter(xs, groups, dim, tiled):
    out = []
    for p in range(len(xs)):
        g, j = _where(groups, p)
        total = sum(xs[q] for q in g)
        chunk = np.split(total, len(g), axis=dim)[j]
        out.append(chunk if tiled else np.squeeze(chunk, dim))
    return np.stack(out)


def _np_all_to_all(xs, groups, split, concat, tiled):
    out = []
    for p in range(len(xs)):
        g, j = _where(groups, p)
        parts = [np.split(xs[q], len(g), axis=split)[j] for q in g]
        if not tiled:
            parts = [np.squeeze(c, split) for c in parts]
        out.append(np.concatenate(parts, concat) if tiled else np.stack(parts, concat))
    return np.stack(out)


def _cases(groups):
    """(name, minijax per-device function, NumPy reference over the stacked input)."""
    m = len(groups[0])
    r = X.reshape(4, 2, 3)
    return [
        ("all_gather", lambda v: lax.all_gather(v, "i", axis_index_groups=groups),
         lambda xs: _np_all_gather(xs, groups, 0, False)),
        ("all_gather_axis1_tiled",
         lambda v: lax.all_gather(v.reshape(2, 3), "i", axis_index_groups=groups, axis=1,
                                  tiled=True),
         lambda xs: _np_all_gather(xs.reshape(4, 2, 3), groups, 1, True)),
        ("psum_scatter_tiled",
         lambda v: lax.psum_scatter(v, "i", axis_index_groups=groups, tiled=True,
                                    scatter_dimension=0),
         lambda xs: _np_psum_scatter(xs, groups, 0, True)),
        ("psum_scatter", lambda v: lax.psum_scatter(v[:m], "i", axis_index_groups=groups),
         lambda xs: _np_psum_scatter(xs[:, :m], groups, 0, False)),
        ("all_to_all_tiled",
         lambda v: lax.all_to_all(v.reshape(2, 3), "i", 1, 0, axis_index_groups=groups,
                                  tiled=True) if 3 % m == 0 else
         lax.all_to_all(v.reshape(2, 3), "i", 0, 1, axis_index_groups=groups, tiled=True),
         lambda xs: _np_all_to_all(r, groups, 1, 0, True) if 3 % m == 0 else
         _np_all_to_all(r, groups, 0, 1, True)),
        ("all_to_all", lambda v: lax.all_to_all(v[:m], "i", 0, 0, axis_index_groups=groups),
         lambda xs: _np_all_to_all(xs[:, :m], groups, 0, 0, False)),
    ]


def _valid(name, groups):
    m = len(groups[0])
    if name == "psum_scatter_tiled":
        return 6 % m == 0
    if name == "all_to_all_tiled":
        return 3 % m == 0 or 2 % m == 0
    return True


@pytest.mark.parametrize("groups", GROUPS)
def test_grouped_collectives_equal_numpy_under_pmap_and_jit_of_pmap(groups):
    for name, f, ref in _cases(groups):
        if not _valid(name, groups):
            continue
        want = ref(X)
        got = np.asarray(_pmap(f)(X))
        np.testing.assert_array_equal(got, want, err_msg=name)
        # Inside an outer jit, pmap runs as a device-axis vmap: the same values.
        got_jit = np.asarray(minijax.jit(lambda x, f=f: _pmap(f)(x))(X))
        np.testing.assert_array_equal(got_jit, want, err_msg=f"jit {name}")


def test_values_as_jax():
    g = [[0, 2], [1, 3]]
    # JAX 0.10: jax.pmap(lambda v: lax.psum_scatter(v[:2], 'i', axis_index_groups=g))(X)
    np.testing.assert_array_equal(
        np.asarray(_pmap(lambda v: lax.psum_scatter(v[:2], "i", axis_index_groups=g))(X)),
        [12, 24, 14, 26])
    # JAX 0.10: ... all_to_all(v, 'i', 0, 0, axis_index_groups=g, tiled=True)
    np.testing.assert_array_equal(
        np.asarray(_pmap(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=g,
                                                  tiled=True))(X)),
        [[0, 1, 2, 12, 13, 14], [6, 7, 8, 18, 19, 20], [3, 4, 5, 15, 16, 17],
         [9, 10, 11, 21, 22, 23]])


def test_grads_as_jax():
    """The transposes keep the groups: all_gather <-> psum_scatter, all_to_all back."""
    g = [[0, 2], [1, 3]]
    w2, w6 = jnp.arange(2.0)[:, None], jnp.arange(6.0)

    def ag(v):
        return jnp.sum(lax.all_gather(v, "i", axis_index_groups=g) ** 2 * w2)

    def ps(v):
        return jnp.sum(lax.psum_scatter(v, "i", axis_index_groups=g, tiled=True) ** 2)

    def a2a(v):
        return jnp.sum(lax.all_to_all(v, "i", 0, 0, axis_index_groups=g, tiled=True) ** 2 * w6)

    # JAX 0.10: jax.pmap(jax.grad(loss), 'i')(X) for each loss.
    want = {
        ag: [[0] * 6, [0] * 6, [48, 52, 56, 60, 64, 68], [72, 76, 80, 84, 88, 92]],
        ps: [[24, 28, 32, 36, 40, 44], [48, 52, 56, 60, 64, 68]] * 2,
        a2a: [[0, 2, 8, 0, 8, 20], [0, 14, 32, 0, 20, 44], [72, 104, 140, 90, 128, 170],
              [108, 152, 200, 126, 176, 230]],
    }
    for loss, expect in want.items():
        np.testing.assert_allclose(np.asarray(_pmap(minijax.grad(loss))(X)), expect)
        # grad outside the pmap: the per-device losses summed, same gradient.
        outer = minijax.grad(lambda x, loss=loss: jnp.sum(_pmap(loss)(x)))(X)
        np.testing.assert_allclose(np.asarray(outer), expect, err_msg=loss.__name__)


def test_vmap_of_pmap_with_groups():
    g = [[0, 1], [2, 3]]
    xs = np.stack([X, -2 * X], axis=1)      # [4 devices, 2 batch, 6]
    f = _pmap(lambda v: lax.all_gather(v, "i", axis_index_groups=g, tiled=True))
    got = np.asarray(minijax.vmap(f, in_axes=1)(xs))
    want = np.stack([_np_all_gather(xs[:, b], g, 0, True) for b in range(2)])
    np.testing.assert_array_equal(got, want)


def test_lowered_hlo_has_replica_groups_and_round_trips():
    g = [[0, 3], [1, 2]]

    def f(v):
        return (lax.all_gather(v, "i", axis_index_groups=g, tiled=True),
                lax.psum_scatter(v, "i", axis_index_groups=g, tiled=True),
                lax.all_to_all(v, "i", 0, 0, axis_index_groups=g, tiled=True))
    mapped = _pmap(f)
    outs = mapped(X)
    for got, want in zip(outs, [_np_all_gather(X, g, 0, True), _np_psum_scatter(X, g, 0, True),
                                _np_all_to_all(X, g, 0, 0, True)], strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)
    (program, *_), = mapped._programs.values()
    text = program.as_text()
    for op in ("all-gather(", "reduce-scatter(", "all-to-all("):
        line = next(ln for ln in text.splitlines() if op in ln)
        assert "replica_groups={{0,3},{1,2}}" in line, line
    printed = module_to_text(parse_module(text))
    assert module_to_text(parse_module(printed)) == printed


# JAX 0.10's HLO for its grouped collectives (jax.pmap(f).lower(x).as_text('hlo'), body).
JAX_GROUPED = """
HloModule grouped

region_0.1 {
  reduce_scatter.2 = f32[] parameter(0)
  reduce_scatter.3 = f32[] parameter(1)
  ROOT add.1 = f32[] add(reduce_scatter.2, reduce_scatter.3)
}

ENTRY main {
  squeeze.1 = f32[4]{0} parameter(0)
  all_gather.1 = f32[8]{0} all-gather(squeeze.1), channel_id=1, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  reduce_scatter.5 = f32[2]{0} reduce-scatter(squeeze.1), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, dimensions={0}, to_apply=region_0.1
  all_to_all.1 = f32[4]{0} all-to-all(squeeze.1), channel_id=1, replica_groups={{0,2},{1,3}}, dimensions={0}
  ROOT tuple.1 = (f32[8]{0}, f32[2]{0}, f32[4]{0}) tuple(all_gather.1, reduce_scatter.5, all_to_all.1)
}
"""  # noqa: E501


def test_jax_hlo_of_grouped_collectives_runs_as_numpy():
    module = parse_module(JAX_GROUPED)
    printed = module_to_text(module)
    assert module_to_text(parse_module(printed)) == printed
    backend = get_backend("cpu")
    exe, _ = compile_module(module, backend, CompileOptions(backend="cpu"))
    xs = np.arange(16.0, dtype=np.float32).reshape(4, 4) ** 2
    outs = run_spmd(backend, exe, minijax.devices()[:4], [[x] for x in xs])
    g = [[0, 2], [1, 3]]
    refs = [_np_all_gather(xs, g, 0, True), _np_psum_scatter(xs, g, 0, True),
            _np_all_to_all(xs, g, 0, 0, True)]
    for k, ref in enumerate(refs):
        np.testing.assert_array_equal(np.stack([np.asarray(o[k]) for o in outs]), ref)


def test_shard_map_groups_on_one_axis_of_a_2d_mesh():
    """Groups index the named axis; each row of the mesh has its own groups."""
    mesh = Mesh(np.array(minijax.devices()[:8]).reshape(2, 4), ("d", "i"))
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    g = [[0, 2], [1, 3]]
    f = minijax.shard_map(lambda v: lax.all_gather(v, "i", axis_index_groups=g, tiled=True),
                          mesh=mesh, in_specs=P(("d", "i")), out_specs=P(("d", "i")))
    got = np.asarray(f(x))
    blocks = x.reshape(2, 4, 1, 3)
    want = np.concatenate([_np_all_gather(blocks[r], g, 0, True) for r in range(2)])
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    # Under jit shard_map runs as nested device-axis vmaps: the same values.
    np.testing.assert_array_equal(np.asarray(minijax.jit(f)(x)), got)


def test_errors_as_jax():
    with pytest.raises(ValueError, match="cover all indices exactly once"):
        _pmap(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 1], [1, 2]]))(X)
    with pytest.raises(ValueError, match="same size"):
        _pmap(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 1, 2], [3]],
                                       tiled=True))(X)
    # JAX: "reduce_scatter operand scatter dimension size 6 must match shard count 2".
    with pytest.raises(ValueError, match="size 6, which must be equal to the size 2 of the "
                                         "axis_index_groups"):
        _pmap(lambda v: lax.psum_scatter(v, "i", axis_index_groups=[[0, 2], [1, 3]]))(X)
    with pytest.raises(ValueError, match="must be equal to the size 2"):
        _pmap(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 2], [1, 3]]))(X)
    for f in (lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
              lambda v: lax.psum_scatter(v, "i", axis_index_groups=[[0, 1], [2, 3]],
                                         tiled=True),
              lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]],
                                       tiled=True)):
        with pytest.raises(NotImplementedError, match="axis_index_groups not supported in "
                                                      "vmap"):
            minijax.vmap(f, axis_name="i")(X)


@pytest.mark.parametrize("name, reduce", [("psum", np.sum), ("pmean", np.mean),
                                          ("pmax", np.max), ("pmin", np.min)])
def test_grouped_reductions_inside_jit_and_grad_of_pmap(name, reduce):
    g = [[3, 0], [1, 2]]
    op = getattr(lax, name)
    f = _pmap(lambda v: op(v, "i", axis_index_groups=g))
    want = np.empty_like(X)
    for grp in g:
        want[grp] = reduce(X[grp], axis=0)
    np.testing.assert_array_equal(np.asarray(minijax.jit(f)(X)), want)
    np.testing.assert_array_equal(np.asarray(f(X)), want)
    w = np.linspace(-1, 2, 24, dtype=np.float32).reshape(4, 6)
    top = _pmap(minijax.grad(lambda v, w: jnp.sum(op(v, "i", axis_index_groups=g) * w)))(X, w)
    outer = minijax.grad(lambda x: jnp.sum(f(x) * w))(X)
    # The gradient of the summed per-device losses is what pmap(grad) gives (the
    # transposes keep the groups): for psum the group's total weight, for pmean its mean.
    np.testing.assert_allclose(np.asarray(outer), np.asarray(top), rtol=1e-6)
    if name in ("psum", "pmean"):
        want_grad = np.empty_like(X)
        for grp in g:
            want_grad[grp] = reduce(w[grp], axis=0)
        np.testing.assert_allclose(np.asarray(outer), want_grad, rtol=1e-6)
