"""The program planner shared by compiled backends (cpu, cuda).

An optimized HLO computation becomes a `Program`: a list of steps over an environment (one
slot per instruction, plus a last slot for the backend's per-call state, e.g. the CPU's
temp pool). The planner walks the instructions once and decides, for each, what runs:

- data movement with no kernel: parameters, constants, tuples, get-tuple-element,
  after-all, optimization barriers (generic);
- fusions and unfused elementwise/indexing/reduce instructions: `fused_kernel` (the
  backend compiles the fused computation and launches it);
- row-major reshapes/bitcasts: `view_step` (a view, no copy, where the backend can);
- library calls (dot, convolution): `library_step`;
- while / conditional / call: nested programs driven by a Python loop, reading loop
  predicates with `read_scalar` (a device backend copies one scalar to the host); a
  backend may run a while loop some faster way first (`while_step`; the CPU backend: one
  native loop);
- anything else: `fallback_step` (host backends: the HLO evaluator's instruction).

A backend subclasses ProgramPlanner and overrides those hooks; everything else (program
caching, slots, control flow, the fast tuple-state while loop) is shared.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax.compiler.codegen.kernel_plan import wrap_instruction
from minijax.compiler.evaluator import evaluate_instruction, has_implementation
from minijax.compiler.hlo.ir import Computation, Instruction

MOVES = ("after-all", "optimization-barrier", "copy-start", "copy-done")


def opcode_support(opcode: str, kernels, libraries, no_ops) -> str:
    """How a backend built on this planner runs `opcode`, given the opcodes it has kernels,
    library calls and no-ops for: "kernel", "view", "library", "program" (nested programs
    for control flow), "no-op", "thunk" (the host evaluator) or "unsupported"."""
    if opcode in kernels or opcode == "fusion":
        return "kernel"
    if opcode in ("reshape", "bitcast"):
        return "view"
    if opcode in libraries:
        return "library"
    if opcode in ("while", "conditional", "call"):
        return "program"
    if opcode in no_ops:
        return "no-op"
    return "thunk" if has_implementation(opcode) else "unsupported"


class Program:
    """A computation as a list of steps over an environment list (one slot per instruction,
    then one for the backend's per-call state)."""

    def __init__(self, comp: Computation):
        self.comp = comp
        self.slot = {id(i): k for k, i in enumerate(comp.instructions)}
        self.template: list = [None] * (len(comp.instructions) + 1)
        self.param_slots = [self.slot[id(p)] for p in comp.parameters]
        self.root_slot = self.slot[id(comp.root)]
        self.steps: list = []
        self.root_operand_slots = None
        self.notes: list[str] = []
        self.kernel_count = 0
        self.step_instrs: list[Instruction] = []  # the instruction of each step (profiler)

    def run(self, args):
        env = self.template.copy()
        env[-1] = None  # no per-call state: kernels allocate their outputs
        for s, a in zip(self.param_slots, args):
            env[s] = a
        for step in self.steps:
            step(env)
        return env[self.root_slot]


def coerce_host(value, shape):
    """An evaluator result as a host buffer: C-contiguous arrays, lists for tuples."""
    if shape.is_tuple:
        return [coerce_host(v, s) for v, s in zip(value, shape.tuple_shapes)]
    # np.asarray(order="C"), not np.ascontiguousarray, which turns rank-0 arrays into (1,).
    return np.asarray(np.asarray(value, dtype=shape.dtype).reshape(shape.dims), order="C")


class ProgramPlanner:
    """Plans the computations of one module into Programs (see the module docstring)."""

    #: Opcodes the backend compiles as one-instruction kernels when not fused.
    kernel_opcodes: frozenset = frozenset()

    def __init__(self, module):
        self.module = module
        self.programs: dict[int, Program] = {}

    # ------------------------------------------------------------------ hooks
    def constant(self, instr: Instruction):
        """The buffer holding a constant's literal (host backends: a NumPy array)."""
        return coerce_host(instr.literal, instr.shape)

    def fused_kernel(self, prog: Program, comp: Computation, operands, instr: Instruction,
                     label: str) -> bool:
        """Add steps launching kernels for fused computation `comp` (the body of `instr`, or
        a one-instruction wrapper); False when the backend cannot generate it."""
        return False

    def view_step(self, prog: Program, instr: Instruction, ops: list, s: int) -> bool:
        """Add a no-copy step for a reshape/bitcast when the backend can; else False."""
        return False

    def library_step(self, prog: Program, instr: Instruction, ops: list, s: int) -> bool:
        """Add a library call step (gemm, convolution, ...) for `instr`; else False."""
        return False

    def fallback_step(self, prog: Program, instr: Instruction, ops: list, s: int) -> None:
        """Add a step for an instruction nothing else handles (host: the evaluator)."""
        shape = instr.shape
        prog.kernel_count += 1
        prog.notes.append(f"{instr.name}: EVALUATOR THUNK ({instr.opcode})")

        def step(env):
            env[s] = coerce_host(evaluate_instruction(instr, [env[o] for o in ops]), shape)
        prog.steps.append(step)

    def why_not_kernel(self, comp: Computation) -> str:
        """Why `fused_kernel` declined `comp` (for the execution plan's notes)."""
        return "not supported by the backend"

    def while_step(self, prog: Program, instr: Instruction, ops: list, s: int) -> bool:
        """Add one step running while loop `instr` some faster way than the Python driver
        (the CPU backend: one native loop); else False."""
        return False

    @staticmethod
    def read_scalar(value):
        """A rank-0 buffer's value on the host (loop and branch predicates)."""
        return value

    # ------------------------------------------------------------------ planning
    def program(self, comp: Computation) -> Program:
        """The Program of `comp` (planned once per computation)."""
        cached = self.programs.get(id(comp))
        if cached is not None:
            return cached
        prog = Program(comp)
        self.programs[id(comp)] = prog
        for instr in comp.instructions:
            n = len(prog.steps)
            self._instruction(prog, instr)
            prog.step_instrs.extend([instr] * (len(prog.steps) - n))
        return prog

    def _instruction(self, prog: Program, instr: Instruction) -> None:
        op = instr.opcode
        s = prog.slot[id(instr)]
        ops = [prog.slot[id(o)] for o in instr.operands]
        if op == "parameter":
            return
        if op == "constant":
            prog.template[s] = self.constant(instr)
            return
        if op == "tuple":
            def tuple_step(env):
                env[s] = [env[o] for o in ops]
            if instr is prog.comp.root:
                prog.root_operand_slots = ops
                tuple_step.root_tuple = True
            prog.steps.append(tuple_step)
            return
        if op == "get-tuple-element":
            index, src = instr.attrs["index"], ops[0]
            prog.steps.append(lambda env: env.__setitem__(s, env[src][index]))
            return
        if op in ("reshape", "bitcast") and self.view_step(prog, instr, ops, s):
            return
        if op in MOVES:
            src = ops[0] if ops else None
            prog.steps.append(lambda env: env.__setitem__(s, env[src] if src is not None
                                                          else None))
            return
        if op == "fusion":
            comp = instr.called["calls"]
            if self.fused_kernel(prog, comp, instr.operands, instr, f"fusion {instr.name}"):
                return
            sub = self.program(comp)
            prog.kernel_count += sub.kernel_count
            prog.notes.append(f"{instr.name}: fusion run as a program "
                              f"({self.why_not_kernel(comp)})")
            prog.steps.append(call_step(sub, ops, s))
            return
        if op in self.kernel_opcodes and not any(o.shape.is_tuple for o in instr.operands):
            comp, operands = wrap_instruction(instr)
            if self.fused_kernel(prog, comp, operands, instr, f"{op} {instr.name}"):
                return
        if self.library_step(prog, instr, ops, s):
            return
        if op == "while" and self.while_step(prog, instr, ops, s):
            return
        if op in ("while", "conditional", "call"):
            prog.steps.append(control_step(self, instr, ops, s))
            prog.notes.append(f"{instr.name}: {op} (nested programs)")
            return
        self.fallback_step(prog, instr, ops, s)


def call_step(sub: Program, ops: list, s: int):
    """A step running program `sub` on the values in slots `ops` into slot `s`."""
    def step(env):
        env[s] = sub.run([env[o] for o in ops])
    return step


# --------------------------------------------------------------------------- control flow


def control_step(planner: ProgramPlanner, instr: Instruction, ops: list, s: int):
    """while / conditional / call over nested programs of the called computations."""
    op = instr.opcode
    read = planner.read_scalar
    if op == "call":
        return call_step(planner.program(instr.called["to_apply"]), ops, s)
    if op == "while":
        cond = planner.program(instr.called["condition"])
        body = planner.program(instr.called["body"])
        src = ops[0]
        fast = _tuple_loop(cond, body, src, s, read)
        if fast is not None:
            return fast

        def while_(env):
            state = env[src]
            while bool(read(cond.run([state]))):
                state = body.run([state])
            env[s] = state
        return while_
    if "branch_computations" in instr.called:
        branches = [planner.program(c) for c in instr.called["branch_computations"]]
        pred = False
    else:
        branches = [planner.program(instr.called["true_computation"]),
                    planner.program(instr.called["false_computation"])]
        pred = True
    sel, args = ops[0], ops[1:]
    last = len(branches) - 1

    def conditional(env):
        v = read(env[sel])
        if pred:
            k = 0 if bool(v) else 1
        else:
            k = int(v)
            k = last if k < 0 or k > last else k  # XLA runs the last branch when out of range
        env[s] = branches[k].run([env[args[k]]])
    return conditional


def _unpacked(prog: Program, returns_tuple: bool):
    """A program over a tuple parameter with its `get-tuple-element(param, i)` steps (and,
    if `returns_tuple`, its root tuple step) taken out: (template, param slot, [(slot, i)]
    to seed from the tuple, remaining steps, root slots or root slot), or None when the
    program does not have that shape."""
    comp = prog.comp
    params = comp.parameters
    if len(params) != 1 or not params[0].shape.is_tuple:
        return None
    param = params[0]
    instrs = [i for i in comp.instructions if i.opcode not in ("parameter", "constant")]
    if len(instrs) != len(prog.steps):
        return None  # steps are not one per instruction: leave the program as it is
    seeds, steps = [], []
    for instr, step in zip(instrs, prog.steps):
        if instr.opcode == "get-tuple-element" and instr.operands[0] is param:
            seeds.append((prog.slot[id(instr)], instr.attrs["index"]))
        elif not (returns_tuple and instr is comp.root):
            steps.append(step)
    if returns_tuple:
        root = comp.root
        if root.opcode != "tuple" or root.shape != param.shape:
            return None
        out = [prog.slot[id(o)] for o in root.operands]
    else:
        out = prog.root_slot
    return prog.template, prog.slot[id(param)], seeds, steps, out


_INT_COMPARES = {"LT": operator.lt, "LE": operator.le, "GT": operator.gt,
                 "GE": operator.ge, "EQ": operator.eq, "NE": operator.ne}
_SWAPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _counter_test(comp: Computation):
    """(i, test, limit) when condition `comp` is `compare(get-tuple-element(param, i),
    integer constant)` (either order, possibly as a one-instruction fusion): the loop then
    tests `test(int(state[i]), limit)` in Python instead of running a kernel."""
    root, operands = comp.root, None
    if root.opcode == "fusion":
        inner = root.called["calls"]
        if len(inner.instructions) != 3 or len(root.operands) != 1:
            return None
        operands = root.operands
        root = inner.root
    if root.opcode != "compare" or root.shape.rank != 0:
        return None
    a, b = root.operands
    direction = root.attrs.get("direction", "EQ")
    if a.opcode == "constant":
        a, b, direction = b, a, _SWAPPED.get(direction)
    if operands is not None and a.opcode == "parameter":
        a = operands[a.parameter_number]
    if (b.opcode != "constant" or a.opcode != "get-tuple-element"
            or a.operands[0] is not comp.parameters[0] or direction not in _INT_COMPARES
            or a.shape.rank != 0 or b.shape.rank != 0
            or not np.issubdtype(a.shape.dtype, np.integer) or b.shape.dtype != a.shape.dtype):
        return None
    return a.attrs["index"], _INT_COMPARES[direction], int(np.asarray(b.literal))


def _run_unpacked(unpacked, state):
    """Run one computation unpacked by `_unpacked` on the tuple `state`; its slots."""
    template, param, seeds, steps, _ = unpacked
    e = template.copy()
    e[param] = state
    for slot, i in seeds:
        e[slot] = state[i]
    for step in steps:
        step(e)
    return e


def _tuple_loop(cond: Program, body: Program, src: int, s: int, read):
    """A while loop over a tuple state with the per-iteration work cut to the kernels: the
    state's elements go straight into the slots of the get-tuple-elements that read them,
    and the next state is read from the body's root tuple operands (no tuple is built)."""
    c = _unpacked(cond, False)
    b = _unpacked(body, True)
    if c is None or b is None:
        return None
    c_root, b_out = c[4], b[4]
    counter = _counter_test(cond.comp)
    if counter is not None:
        index, test, limit = counter

        def counted(env):
            state = env[src]
            while test(int(read(state[index])), limit):
                e = _run_unpacked(b, state)
                state = [e[k] for k in b_out]
            env[s] = state
        return counted

    def while_(env):
        state = env[src]
        while True:
            if not read(_run_unpacked(c, state)[c_root]):
                break
            e = _run_unpacked(b, state)
            state = [e[k] for k in b_out]
        env[s] = state
    return while_

