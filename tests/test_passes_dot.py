"""Transpose folding and dot canonicalization."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_passes_common import dims_text, entry_opcodes, hlo, run_pass

from minijax.compiler.passes.dot_canonicalization import DotCanonicalization, is_canonical
from minijax.compiler.passes.transpose_folding import TransposeFolding


def _dot(module):
    return next(i for i in module.entry.instructions if i.opcode == "dot")


def test_transpose_of_lhs_folds_into_contracting_dims():
    entry = """
  a = f32[5,3] parameter(0)
  b = f32[5,4] parameter(1)
  at = f32[3,5] transpose(a), dimensions={1,0}
  d = f32[3,4] dot(at, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[3,4]) tuple(d)"""
    module, changed = run_pass(TransposeFolding(), hlo(entry))
    assert changed and entry_opcodes(module)["transpose"] == 0
    assert _dot(module).attrs["lhs_contracting_dims"] == (0,)


def test_transpose_reordering_free_dims_is_not_folded():
    entry = """
  a = f32[3,4,5] parameter(0)
  b = f32[5,2] parameter(1)
  at = f32[4,3,5] transpose(a), dimensions={1,0,2}
  d = f32[4,3,2] dot(at, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT t = (f32[4,3,2]) tuple(d)"""
    module, changed = run_pass(TransposeFolding(), hlo(entry))
    assert not changed and entry_opcodes(module)["transpose"] == 1


def test_canonical_dot_is_left_alone():
    entry = """
  a = f32[2,3,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, \
lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (f32[2,3,5]) tuple(d)"""
    module, changed = run_pass(DotCanonicalization(), hlo(entry))
    assert not changed and is_canonical(_dot(module))


def test_matrix_vector_becomes_matrix_matrix():
    entry = """
  a = f32[3,4] parameter(0)
  v = f32[4] parameter(1)
  d = f32[3] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[3]) tuple(d)"""
    module, changed = run_pass(DotCanonicalization(), hlo(entry))
    assert changed
    dot = _dot(module)
    assert is_canonical(dot) and dot.shape.dims == (3, 1)


@settings(max_examples=12, deadline=None)
@given(batch=st.lists(st.integers(1, 3), max_size=2), m=st.lists(st.integers(1, 3), max_size=2),
       k=st.lists(st.integers(1, 3), min_size=1, max_size=2),
       n=st.lists(st.integers(1, 3), max_size=2), data=st.data())
def test_any_dot_canonicalizes_with_same_values(batch, m, k, n, data):
    """Lay out batch/free/contracting dims of each operand in a random order."""
    lhs_dims = [("b", i) for i in range(len(batch))] + [("m", i) for i in range(len(m))] + \
        [("k", i) for i in range(len(k))]
    rhs_dims = [("b", i) for i in range(len(batch))] + [("k", i) for i in range(len(k))] + \
        [("n", i) for i in range(len(n))]
    lhs_order = data.draw(st.permutations(lhs_dims))
    rhs_order = data.draw(st.permutations(rhs_dims))
    size = {"b": batch, "m": m, "k": k, "n": n}
    free_lhs = [d for d in lhs_order if d[0] == "m"]
    free_rhs = [d for d in rhs_order if d[0] == "n"]
    out = [size["b"][i] for i in range(len(batch))] + [size["m"][i] for _, i in free_lhs] + \
        [size["n"][i] for _, i in free_rhs]

    def pos(order, kind):
        return dims_text(order.index((kind, i)) for i in range(len(size[kind])))

    entry = f"""
  a = f32[{dims_text(size[c][i] for c, i in lhs_order)}] parameter(0)
  b = f32[{dims_text(size[c][i] for c, i in rhs_order)}] parameter(1)
  d = f32[{dims_text(out)}] dot(a, b), lhs_batch_dims={{{pos(lhs_order, "b")}}}, \
rhs_batch_dims={{{pos(rhs_order, "b")}}}, lhs_contracting_dims={{{pos(lhs_order, "k")}}}, \
rhs_contracting_dims={{{pos(rhs_order, "k")}}}
  ROOT t = (f32[{dims_text(out)}]) tuple(d)"""
    module, _ = run_pass(DotCanonicalization(), hlo(entry), rtol=1e-4)
    assert is_canonical(_dot(module))
    module2, _ = run_pass(TransposeFolding(), hlo(entry), rtol=1e-4)
