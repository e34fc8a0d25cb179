"""XLA's asynchronous op pairs and `get-dimension-size`, as the evaluator runs them.

Scheduled XLA modules split an op into a start and a done: `all-reduce-start` (the
all-reduce's own shape) / `all-reduce-done`; `all-gather-start` and
`collective-permute-start` (tuples holding the operand and the result, and for the
permute two u32 contexts) / `*-done` (the result); `copy-start` ((dest, source, u32
context)) / `copy-done`; and the general `async-start` ((operands), result, context),
`async-update` and `async-done`, which wrap a computation (`calls=`). A start computes
everything; update passes its operand through; done extracts the result.
`get-dimension-size` of a static shape is that dimension (s32).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from minijax.compiler.evaluator import collectives
from minijax.compiler.evaluator.core import evaluate_computation

_SYNC = {"all-reduce-start": collectives.all_reduce,
         "all-gather-start": collectives.all_gather,
         "collective-permute-start": collectives.collective_permute}


def _result_shape(instr):
    """The shape of the result a start's tuple carries (index 1), or the start's own."""
    shape = instr.shape
    return shape.tuple_shapes[1] if shape.is_tuple else shape


def _collective_start(instr, ops, ctx):
    sync = replace(instr, opcode=instr.opcode[: -len("-start")], shape=_result_shape(instr))
    result = _SYNC[instr.opcode](sync, ops, ctx)
    if not instr.shape.is_tuple:
        return result
    operand = ops[0] if len(ops) == 1 else tuple(ops)
    contexts = tuple(np.zeros(s.dims, s.dtype) for s in instr.shape.tuple_shapes[2:])
    return (operand, result, *contexts)


def _done(instr, ops, ctx):
    value = ops[0]
    return value[1] if isinstance(value, tuple) and not instr.opcode.startswith("copy") \
        else (value[0] if isinstance(value, tuple) else value)


def _copy_start(instr, ops, ctx):
    contexts = tuple(np.zeros(s.dims, s.dtype) for s in instr.shape.tuple_shapes[2:])
    return (np.array(ops[0], copy=True), ops[0], *contexts)


def _async_start(instr, ops, ctx):
    result = evaluate_computation(instr.called["calls"], list(ops))
    contexts = tuple(np.zeros(s.dims, s.dtype) for s in instr.shape.tuple_shapes[2:])
    return (tuple(ops), result, *contexts)


def _async_update(instr, ops, ctx):
    return ops[0]


def _get_dimension_size(instr, ops, ctx):
    dim = instr.attrs["dimensions"][0]
    return np.asarray(np.shape(ops[0])[dim], dtype=instr.shape.dtype)


OPCODES = {
    "all-reduce-start": _collective_start, "all-reduce-done": _done,
    "all-gather-start": _collective_start, "all-gather-done": _done,
    "collective-permute-start": _collective_start, "collective-permute-done": _done,
    "copy-start": _copy_start, "copy-done": _done,
    "async-start": _async_start, "async-update": _async_update, "async-done": _done,
    "get-dimension-size": _get_dimension_size,
}
