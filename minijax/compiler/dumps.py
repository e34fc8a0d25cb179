"""Compilation dumps driven by MINIJAX_FLAGS="--dump_to=DIR [--dump_pass_re=RE] [--dump_as_dot]".

Per compiled module, numbered files named after the Python function:
  NNNN.fn.before_optimizations.hlo    HLO as lowered
  NNNN.fn.after_optimizations.hlo     HLO after the pass pipeline (fusions visible)
  NNNN.fn.fusion_log.txt              every fusion decision with its reason
  NNNN.fn.buffer_assignment.txt       buffer slots, temp and peak bytes
  NNNN.fn.inputs.txt                  argument shapes and names
  NNNN.fn.options.txt                 compile options, config, versions and target
  NNNN.fn.ll / .ptx                   generated LLVM IR / PTX when the backend has them
  NNNN.fn.dot                         Graphviz graph of the optimized entry (--dump_as_dot)
and an index.txt listing the modules. Per-pass HLO goes to the same folder when
--dump_pass_re matches a pass name.
"""

from __future__ import annotations

import itertools
import os
import platform
import shlex
import threading
from dataclasses import dataclass

from minijax.compiler.hlo.printer import module_to_text
from minijax.config import config
from minijax.version import __version__

_counter = itertools.count()
_lock = threading.Lock()


@dataclass(frozen=True)
class DumpFlags:
    dump_to: str | None = None
    dump_pass_re: str | None = None
    dump_as_dot: bool = False


def parse_flags(text: str) -> DumpFlags:
    """Parse MINIJAX_FLAGS text; unknown flags raise ValueError naming the flag."""
    values = {}
    for token in shlex.split(text or ""):
        if not token.startswith("--"):
            raise ValueError(f"MINIJAX_FLAGS: expected --flag or --flag=value, got {token!r}")
        key, _, value = token[2:].partition("=")
        if key not in ("dump_to", "dump_pass_re", "dump_as_dot"):
            raise ValueError(f"MINIJAX_FLAGS: unknown flag --{key} (known: --dump_to=DIR, "
                             "--dump_pass_re=RE, --dump_as_dot)")
        values[key] = value if key != "dump_as_dot" else value.lower() not in ("0", "false")
    return DumpFlags(**values)


def dump_flags() -> DumpFlags:
    text = config.minijax_flags
    return parse_flags(text)


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def dump_module(flags: DumpFlags, fun_name: str, lowered, module, executable, timings) -> str:
    """Write the dump files of one compiled module; returns the file-name prefix."""
    os.makedirs(flags.dump_to, exist_ok=True)
    with _lock:
        number = next(_counter)
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in fun_name)
    prefix = os.path.join(flags.dump_to, f"{number:04d}.{safe}")
    _write(prefix + ".before_optimizations.hlo", lowered.as_text())
    _write(prefix + ".after_optimizations.hlo", module_to_text(module))
    _write(prefix + ".fusion_log.txt", "\n".join(module.fusion_log) + "\n")
    assignment = module.buffer_assignment
    if assignment is not None:
        _write(prefix + ".buffer_assignment.txt", assignment.to_text())
    inputs = [f"{name}: {aval}" for name, aval in zip(lowered.arg_names,
                                                       lowered.signature.avals, strict=False)]
    _write(prefix + ".inputs.txt", "\n".join(inputs) + "\n")
    import numpy
    options = [f"minijax {__version__}", f"numpy {numpy.__version__}",
               f"python {platform.python_version()}", f"machine {platform.machine()}",
               f"backend {getattr(executable, 'backend_name', '')}",
               f"timings {timings}", f"config {config.values()}"]
    try:
        import llvmlite
        options.append(f"llvmlite {llvmlite.__version__}")
    except ImportError:
        pass
    _write(prefix + ".options.txt", "\n".join(options) + "\n")
    llvm_ir = getattr(executable, "llvm_ir", None)
    if callable(llvm_ir):
        text = llvm_ir()
        if text:
            _write(prefix + ".ll", text)
    ptx = getattr(executable, "ptx", None)
    if callable(ptx):
        text = ptx()
        if text:
            _write(prefix + ".ptx", text)
    if flags.dump_as_dot:
        _write(prefix + ".dot", module_to_dot(module))
    with open(os.path.join(flags.dump_to, "index.txt"), "a") as f:
        f.write(f"{number:04d} {fun_name} {module.name} {prefix}.*\n")
    return prefix


def module_to_dot(module) -> str:
    """A Graphviz graph of the entry computation (fusions drawn as boxes)."""
    lines = ["digraph hlo {", "  node [shape=ellipse, fontname=monospace];"]
    for instr in module.entry.instructions:
        shape = "box" if instr.opcode == "fusion" else "ellipse"
        label = f"{instr.name}\\n{instr.opcode} {instr.shape.element_type}{list(instr.shape.dims)}"
        lines.append(f'  "{instr.name}" [label="{label}", shape={shape}];')
        for op in instr.operands:
            lines.append(f'  "{op.name}" -> "{instr.name}";')
    lines.append("}")
    return "\n".join(lines) + "\n"
