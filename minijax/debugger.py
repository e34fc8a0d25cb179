"""The interactive debugger behind `minijax.debug.breakpoint` (JAX's `jdb`).

`capture_frames` snapshots the calling user frames at trace time and splits their locals
into traced leaves (passed to a debug callback as operands, so the debugger sees their
runtime values) and everything else (kept as is). `CliDebugger` is a small `cmd.Cmd`
REPL over those frames with JAX's commands: `p`/`pp` EXPR (or a bare expression), `l`/`list`,
`u`/`up`, `d`/`down`, `w`/`where`/`bt`, `c`/`continue`, `q`/`quit`/`exit` (and end of input),
which raise `SystemExit(0)` as JAX's CLI debugger does.
"""

from __future__ import annotations

import cmd
import linecache
import pprint
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from minijax import core, tree_util
from minijax.source_info import is_internal_file

__all__ = ["CliDebugger", "DebuggerFrame", "capture_frames", "get_debugger",
           "register_debugger", "run_debugger"]


@dataclass
class DebuggerFrame:
    """One Python frame as the debugger shows it (locals hold concrete values at run time)."""

    filename: str
    function: str
    lineno: int
    locals: dict[str, Any]
    globals: dict[str, Any] = field(repr=False)


class _Slot:
    """A local whose pytree holds tracers: its structure, static leaves and tracer mask."""

    __slots__ = ("tree", "leaves", "traced")

    def __init__(self, tree, leaves, traced):
        self.tree, self.leaves, self.traced = tree, leaves, traced


def _split_local(value, operands):
    """`value` as is, or a `_Slot` after appending its tracer leaves to `operands`."""
    if isinstance(value, core.Tracer):
        operands.append(value)
        return _Slot(None, [None], [True])
    try:
        leaves, tree = tree_util.tree_flatten(value)
    except Exception:  # an object that cannot be flattened holds no tracers we can pass
        return value
    traced = [isinstance(leaf, core.Tracer) for leaf in leaves]
    if not any(traced):
        return value
    operands.extend(leaf for leaf, t in zip(leaves, traced, strict=True) if t)
    return _Slot(tree, leaves, traced)


def capture_frames(skip: int, filter_frames: bool = True, num_frames: int | None = None):
    """Snapshot the caller's frames, innermost first.

    Returns `(operands, rebuild)`: the tracers found in the frames' locals, and a function
    that, given their runtime values (same order), returns the list of `DebuggerFrame`s.
    `filter_frames` drops minijax's internal frames; `num_frames` keeps the innermost ones.
    """
    frame = sys._getframe(skip + 1)
    raw = []
    while frame is not None:
        if not (filter_frames and is_internal_file(frame.f_code.co_filename)):
            raw.append(frame)
        frame = frame.f_back
    if num_frames is not None:
        raw = raw[:num_frames]
    operands: list = []
    templates = []
    for f in raw:
        local_slots = {name: _split_local(v, operands) for name, v in f.f_locals.items()}
        templates.append((f.f_code.co_filename, f.f_code.co_name, f.f_lineno, local_slots,
                          f.f_globals))
    del frame, raw

    def rebuild(values):
        it = iter(values)
        frames = []
        for filename, function, lineno, local_slots, globals_ in templates:
            local_values = {}
            for name, slot in local_slots.items():
                if isinstance(slot, _Slot):
                    leaves = [next(it) if t else leaf
                              for leaf, t in zip(slot.leaves, slot.traced, strict=True)]
                    slot = leaves[0] if slot.tree is None else tree_util.tree_unflatten(
                        slot.tree, leaves)
                local_values[name] = slot
            frames.append(DebuggerFrame(filename, function, lineno, local_values, globals_))
        return frames
    return operands, rebuild


class CliDebugger(cmd.Cmd):
    """A text debugger over captured frames (reads `stdin`, default `sys.stdin`)."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], thread_id: int | None = None,
                 stdin=None, stdout=None, completekey: str = "tab"):
        super().__init__(completekey=completekey, stdin=stdin, stdout=stdout)
        # With no explicit stdin, `input()` reads whatever sys.stdin is now (also a test's).
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        suffix = "" if thread_id is None else f" (thread {thread_id})"
        self.intro = f"Entering jdb:{suffix}"

    # ---------------------------------------------------------------- helpers

    def _out(self, text: str) -> None:
        print(text, file=self.stdout, flush=True)

    def current_frame(self) -> DebuggerFrame:
        return self.frames[self.frame_index]

    def evaluate(self, expr: str):
        """Evaluate `expr` with the current frame's globals and (concrete) locals."""
        frame = self.current_frame()
        env = dict(frame.globals)
        env.update(frame.locals)
        return eval(expr, env)

    def _error(self) -> None:
        msg = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
        self._out(f"*** {msg}")

    def _show(self, arg: str, fmt) -> None:
        if not arg.strip():
            self._out("*** expected an expression")
            return
        try:
            self._out(fmt(self.evaluate(arg)))
        except Exception:
            self._error()

    def print_context(self, num_lines: int = 2) -> None:
        frame = self.current_frame()
        lines = [f"> {frame.filename}({frame.lineno}){frame.function}()"]
        source = linecache.getlines(frame.filename, frame.globals)
        lo, hi = max(frame.lineno - num_lines, 1), min(frame.lineno + num_lines, len(source))
        for n in range(lo, hi + 1):
            marker = "->" if n == frame.lineno else "  "
            lines.append(f"{n:4d} {marker} {source[n - 1].rstrip()}")
        self._out("\n".join(lines))

    # ---------------------------------------------------------------- commands

    def emptyline(self):
        return False  # unlike cmd.Cmd, an empty line does not repeat the last command

    def default(self, line):
        """Evaluate an expression and print its repr."""
        self._show(line, repr)

    def do_p(self, arg):
        """p EXPR: evaluate and print the repr of EXPR."""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp EXPR: evaluate and pretty-print EXPR."""
        self._show(arg, pprint.pformat)

    def do_list(self, arg):
        """l(ist): show the source around the current line."""
        del arg
        self.print_context(num_lines=5)
    do_l = do_list

    def do_up(self, arg):
        """u(p): move one frame out (towards the caller)."""
        del arg
        if self.frame_index == len(self.frames) - 1:
            self._out("At topmost frame.")
        else:
            self.frame_index += 1
        self.print_context()
    do_u = do_up

    def do_down(self, arg):
        """d(own): move one frame in (towards the breakpoint)."""
        del arg
        if self.frame_index == 0:
            self._out("At bottommost frame.")
        else:
            self.frame_index -= 1
        self.print_context()
    do_d = do_down

    def do_where(self, arg):
        """w(here), bt: print the stack, the innermost frame last."""
        del arg
        lines = ["Traceback:"]
        for frame in reversed(self.frames):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.function}')
            text = linecache.getline(frame.filename, frame.lineno, frame.globals).strip()
            lines.append(f"    {text or '<no source>'}")
        self._out("\n".join(lines))
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ont(inue)): leave the debugger and resume the program."""
        del arg
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit), exit: stop the program (raises SystemExit(0), as JAX's debugger)."""
        del arg
        sys.exit(0)
    do_q = do_exit = do_EOF = do_quit

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                return
            except KeyboardInterrupt:
                self._out("--KeyboardInterrupt--")


def run_debugger(frames: list[DebuggerFrame], thread_id: int | None, **kwargs) -> None:
    """The "cli" backend: `CliDebugger(frames, thread_id, **kwargs).run()`."""
    CliDebugger(frames, thread_id, **kwargs).run()


_registry: dict[str, tuple[int, Any]] = {}
debug_lock = threading.Lock()


def register_debugger(name: str, debugger, priority: int) -> None:
    """Add a debugger backend `debugger(frames, thread_id, **kwargs)` (highest priority wins)."""
    if name in _registry:
        raise ValueError(f'Debugger with name "{name}" already registered.')
    _registry[name] = (priority, debugger)


def get_debugger(backend: str | None = None):
    """The named backend if registered, else the highest-priority one (as JAX)."""
    if backend is not None and backend in _registry:
        return _registry[backend][1]
    return max(_registry.values(), key=lambda entry: entry[0])[1]


register_debugger("cli", run_debugger, -1)
