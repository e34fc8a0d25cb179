"""Running a backend program step by step while minijax.profiler records a trace.

A program (see cpu.py's _Program) is a list of steps over an environment of buffers, with
`step_instrs` naming the HLO instruction each step computes. `run_profiled` runs it like
`_Program.run` and records one trace event per kernel, library call or host thunk: named
after the instruction and the user's source line it came from, with the bytes it read and
wrote and the GB/s that makes.
"""

from __future__ import annotations

import os
import time

import numpy as np

from minijax import trace_events

# Steps that move no data (tuples, views): not worth a span each.
_FREE = frozenset({"tuple", "get-tuple-element", "bitcast", "reshape", "after-all",
                   "optimization-barrier", "copy-start", "copy-done"})


def _nbytes(value) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 0


def kernel_label(instr) -> str:
    """`fusion.3 @ train.py:42`: the instruction and the user line it came from."""
    md = instr.metadata or {}
    line = md.get("source_line")
    if line:
        return f"{instr.name} @ {os.path.basename(md.get('source_file', ''))}:{line}"
    return instr.name


def run_profiled(program, args, module_name: str, backend: str):
    """Run `program` on `args` recording per-step events; returns the root's value."""
    env = program.template.copy()
    env[-1] = None  # no temp pool: kernels allocate their outputs
    for s, a in zip(program.param_slots, args):
        env[s] = a
    instrs = program.step_instrs
    if len(instrs) != len(program.steps):
        instrs = [None] * len(program.steps)
    slot = program.slot
    perf = time.perf_counter
    start = perf()
    for step, instr in zip(program.steps, instrs):
        if instr is None or instr.opcode in _FREE:
            step(env)
            continue
        t0 = perf()
        step(env)
        dt = perf() - t0
        nbytes = _nbytes(env[slot[id(instr)]]) + sum(_nbytes(env[slot[id(o)]])
                                                     for o in instr.operands)
        md = instr.metadata or {}
        args_ = {"hlo": instr.name, "opcode": instr.opcode, "bytes": nbytes,
                 "GB/s": float(f"{nbytes / max(dt, 1e-9) / 1e9:.4g}")}
        if md.get("op_name"):
            args_["op_name"] = md["op_name"]
        if md.get("source_line"):
            args_["source"] = f"{md.get('source_file', '')}:{md['source_line']}"
        trace_events.add(kernel_label(instr), "kernel", t0, dt, args_)
    trace_events.add(f"execute {module_name}", "execute", start, perf() - start,
                     {"backend": backend})
    return env[program.root_slot]
