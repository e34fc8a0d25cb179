"""A scatter as a generated CPU kernel (KernelSpec mode "scatter"): one call, one thread.

The kernel copies the operand into the output, then walks the update elements in order
(row-major), as the HLO evaluator does, so a float sum rounds the same way on every run:
- the element's scatter position (the update dims not in `update_window_dims`) picks an
  index vector from the scatter indices (component k along `index_vector_dim`, or the
  scalar itself when that dim is the indices' rank); component k is the window's start
  along operand dim `scatter_dims_to_operand_dims[k]`; an input batching dim starts at the
  position of its paired indices batching dim; other dims start at 0;
- its window position (the `update_window_dims`) is added along the operand's window dims
  (those neither inserted nor batching), in order;
- a window that does not fit inside the operand is skipped whole (XLA's rule), and the
  others combine `to_apply(output, update)` into the output.

Only a single-operand scatter whose operands are all kernel parameters is emitted
(`unsupported_scatter_reason`); the others stay on the evaluator.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.gather import INDEX_TYPES, IndexVectors
from minijax.compiler.codegen.index import Index
from minijax.compiler.codegen.llvm_types import I1, I64, const, emit_counted_loop
from minijax.compiler.hlo.ir import Computation, Shape


def unsupported_scatter_reason(comp: Computation) -> str | None:
    """Why `comp` (a computation whose root is a scatter) is no scatter kernel."""
    root = comp.root
    if len(root.operands) != 3 or root.shape.is_tuple:
        return "a variadic scatter"
    if any(op.opcode != "parameter" for op in root.operands):
        return "a scatter fused with its operands"
    if root.operands[1].shape.element_type not in INDEX_TYPES:
        return f"scatter indices of type {root.operands[1].shape.element_type}"
    if any(leaf.layout is not None and leaf.minor_to_major != tuple(
            range(leaf.rank - 1, -1, -1)) for op in root.operands for leaf in op.shape.flat()):
        return "a scatter of a non-row-major layout"
    return None


def _ints(attrs, key) -> list[int]:
    return [int(d) for d in attrs.get(key, ())]


def emit_scatter(kernel, comp: Computation):
    """Emit the body of `kernel` (a loops.KernelEmitter for `comp`); returns its KernelSpec."""
    b, em = kernel.b, kernel.em
    root = comp.root
    operand, indices, updates = root.operands
    a = root.attrs
    window_dims = _ints(a, "update_window_dims")
    inserted = set(_ints(a, "inserted_window_dims"))
    to_operand = _ints(a, "scatter_dims_to_operand_dims")
    input_batching = _ints(a, "input_batching_dims")
    indices_batching = _ints(a, "scatter_indices_batching_dims")
    vector_dim = int(a.get("index_vector_dim", indices.shape.rank))
    dims = operand.shape.dims
    operand_window = [d for d in range(len(dims))
                      if d not in inserted and d not in input_batching]
    out = kernel.out_ptrs[0]
    nbytes = operand.shape.nbytes
    if nbytes:
        memmove = kernel.module.declare_intrinsic(
            "llvm.memmove", [ir.IntType(8).as_pointer(), ir.IntType(8).as_pointer(), I64])
        i8p = ir.IntType(8).as_pointer()
        src = kernel.param_ptrs[operand.parameter_number]
        b.call(memmove, [b.bitcast(out, i8p), b.bitcast(src, i8p), const(I64, nbytes),
                         ir.Constant(I1, 0)])
    if updates.shape.size and nbytes:
        with em.scope(), emit_counted_loop(b, const(I64, 0), const(I64, updates.shape.size),
                                           "update") as u:
            multi = Index(updates.shape, linear=u).get_multi(b) if updates.shape.rank else []
            position = [m for d, m in enumerate(multi) if d not in window_dims]
            offsets = [multi[d] for d in window_dims]

            vectors = IndexVectors(em, indices, vector_dim, position)
            inside = ir.Constant(I1, 1)
            target = []
            for d, size in enumerate(dims):
                if d in to_operand:
                    s = vectors.component(to_operand.index(d))
                elif d in input_batching:
                    s = vectors.batch_position(indices_batching[input_batching.index(d)])
                else:
                    s = const(I64, 0)
                extent = 1
                if d in operand_window:
                    w = operand_window.index(d)
                    extent = updates.shape.dims[window_dims[w]]
                    t = b.add(s, offsets[w])
                else:
                    t = s
                inside = b.and_(inside, b.and_(
                    b.icmp_signed(">=", s, const(I64, 0)),
                    b.icmp_signed("<=", s, const(I64, size - extent))))
                target.append(t)
            with b.if_then(inside):
                lin = Index(Shape("s64", tuple(dims)), multi=target).get_linear(b)
                ptr = b.gep(out, [lin], inbounds=True)
                et = operand.shape.element_type
                old = em.to_value(b.load(ptr), et)
                new = em.emit(updates, Index(updates.shape, multi=multi, linear=u))
                combined = em.emit_scalar_computation(root.called["to_apply"], [old, new])[0]
                b.store(em.to_storage(combined, et), ptr)
    return kernel._spec("scatter", 1, max(updates.shape.size, 1))
