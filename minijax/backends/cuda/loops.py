"""While loops on a GPU whose trip is decided by a counter: read three scalars once, then
run the body with no host round trip per iteration.

The shared planner (backends/planner.py) evaluates a loop's condition on the device and
copies its one-scalar result to the host every iteration: each copy waits for the stream.
`counted_loop(instr)` recognizes the loops `fori_loop`/`scan` lower to: the condition is
`compare(state[i], L)` and the body sets `state[i] = state[i] + S`, with L and S integer
constants or state elements the body passes through unchanged. The counter's start, L and
S are read once when the loop starts; the host then mirrors the counter (wrapping like the
device's integer type) and runs the body's device steps back to back. The device still
updates its own copy of the counter, which is the value the loop returns.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax.compiler.hlo.ir import Computation, Instruction

_TESTS = {"LT": operator.lt, "LE": operator.le, "GT": operator.gt, "GE": operator.ge,
          "NE": operator.ne, "EQ": operator.eq}
_SWAPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _inline(instr: Instruction, comp: Computation):
    """The (operands-resolved) root of a one-instruction fusion, or the instruction."""
    if instr.opcode != "fusion":
        return instr, None
    inner = instr.called["calls"]
    body = [i for i in inner.instructions if i.opcode not in ("parameter", "constant")]
    if len(body) != 1:
        return None, None
    return inner.root, instr.operands


def _resolve(x: Instruction, operands):
    if operands is not None and x.opcode == "parameter":
        return operands[x.parameter_number]
    return x


def _state_index(x: Instruction, param: Instruction) -> int | None:
    if x.opcode == "get-tuple-element" and x.operands[0] is param:
        return int(x.attrs["index"])
    return None


def _source(x: Instruction, param: Instruction, invariant: set[int]):
    """("const", value) or ("state", index) for a loop-invariant scalar, else None."""
    if x.opcode == "constant" and x.shape.rank == 0:
        return "const", int(np.asarray(x.literal))
    k = _state_index(x, param)
    if k is not None and k in invariant:
        return "state", k
    return None


def counted_loop(instr: Instruction):
    """(counter index, test, limit source, step source, dtype) of a counted while loop (see
    the module docstring), or None."""
    cond, body = instr.called["condition"], instr.called["body"]
    if len(cond.parameters) != 1 or len(body.parameters) != 1:
        return None
    cp, bp = cond.parameters[0], body.parameters[0]
    if not cp.shape.is_tuple or body.root.opcode != "tuple":
        return None
    invariant = {k for k, op in enumerate(body.root.operands) if _state_index(op, bp) == k}
    root, operands = _inline(cond.root, cond)
    if root is None or root.opcode != "compare" or root.shape.rank != 0:
        return None
    a, b = (_resolve(x, operands) for x in root.operands)
    direction = root.attrs.get("direction", "EQ")
    if _state_index(a, cp) is None:
        a, b, direction = b, a, _SWAPPED.get(direction)
    i = _state_index(a, cp)
    limit = _source(b, cp, invariant)
    if i is None or limit is None or direction not in _TESTS or i in invariant:
        return None
    dtype = a.shape.dtype
    if a.shape.rank != 0 or not np.issubdtype(dtype, np.integer) or b.shape.dtype != dtype:
        return None
    update, operands = _inline(body.root.operands[i], body)
    if update is None or update.opcode != "add":
        return None
    x, y = (_resolve(v, operands) for v in update.operands)
    if _state_index(x, bp) != i:
        x, y = y, x
    step = _source(y, bp, invariant)
    if _state_index(x, bp) != i or step is None or y.shape.dtype != dtype:
        return None
    return i, _TESTS[direction], limit, step, np.dtype(dtype)


def _wrap(value: int, dtype: np.dtype) -> int:
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if np.issubdtype(dtype, np.signedinteger) and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def counted_loop_step(counted, body, src: int, s: int, read):
    """The planner step running a loop recognized by `counted_loop` (body: its Program;
    `read(buffer, dtype)`: a device scalar's value)."""
    i, test, limit_src, step_src, dtype = counted

    def value(source, state):
        kind, v = source
        return v if kind == "const" else int(read(state[v], dtype))

    def while_(env):
        state = env[src]
        counter = int(read(state[i], dtype))
        limit, step = value(limit_src, state), value(step_src, state)
        while test(counter, limit):
            state = body.run([state])
            counter = _wrap(counter + step, dtype)
        env[s] = state
    return while_


__all__ = ["counted_loop", "counted_loop_step"]
