"""The optimization pipeline: which passes run, in what order, and what is recorded.

`optimize(module, options)` is the entry point the compiler uses. It builds the default
pipeline for `options.opt_level`:

  0: call inlining, DCE, dot canonicalization, layout and buffer assignment (no fusion)
  1: + a fixed-point group of algebraic simplifier, transpose folding, constant folding,
     CSE and DCE, then loop dot hoisting, and a cleanup group after dot canonicalization
  2: + fusion, then row fusion (unless options.fuse is False)

and leaves `module.buffer_assignment`, `module.fusion_log` (empty without fusion) and
`module.pass_timings` set.

A `Pipeline` runs passes in order, verifies the module after each pass that changed it
(when the verifier is available; shape checks are redone only for instructions that changed,
see passes/incremental_verifier.py), runs `FixedPoint` groups until none of their passes
changes anything (a pass that found nothing is not rerun until another pass changes the
module), times each pass into `pipeline.timings`, calls `dump_hook(module,
pass_name, index)` after passes whose name matches `dump_pass_re`, and at MINIJAX_DEBUG>=3
prints the HLO after each pass to stderr.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable

from minijax import trace_events
from minijax.compiler.hlo.ir import Module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.options import CompileOptions
from minijax.config import debug_level

# The passes are imported when a pipeline is built (default_passes), so that importing
# CompileOptions (a jit call served from the persistent cache) does not load them.
_PASS_CLASSES = {
    "AlgebraicSimplifier": "algebraic_simplifier", "AsyncToSync": "async_to_sync",
    "BufferAssignmentPass": "buffer_assignment",
    "CallInliner": "call_inliner", "LayoutNormalization": "layout_normalization",
    "ConstantFolding": "constant_folding",
    "CommonSubexpressionElimination": "cse", "DeadCodeElimination": "dce",
    "DotCanonicalization": "dot_canonicalization", "Fusion": "fusion",
    "LayoutAssignment": "layout_assignment", "LoopDotHoisting": "loop_dot_hoisting",
    "RowFusion": "row_fusion",
    "TransposeFolding": "transpose_folding",
}


def __getattr__(name: str):
    module = _PASS_CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"minijax.compiler.passes.{module}"), name)


class FixedPoint:
    """Run a group of passes repeatedly until none changes the module (or max_iters)."""

    def __init__(self, passes, max_iters: int = 8, name: str = "fixed-point"):
        self.passes = list(passes)
        self.max_iters = max_iters
        self.name = name

    def __repr__(self) -> str:
        return f"FixedPoint([{', '.join(p.name for p in self.passes)}], {self.max_iters})"


def _verifier():
    """A verifier that re-checks shapes only of instructions changed since they passed."""
    try:  # lazy, as the passes (see _PASS_CLASSES)
        from minijax.compiler.passes.incremental_verifier import IncrementalVerifier
        return IncrementalVerifier()
    except ImportError:
        return None


class PassFailure(RuntimeError):
    """A pass broke the module (the verifier rejected it) or raised."""


class Pipeline:
    """An ordered list of passes and FixedPoint groups."""

    def __init__(self, passes, verify: bool = True,
                 dump_hook: Callable[[Module, str, int], None] | None = None,
                 dump_pass_re: str | None = None, name: str = "pipeline"):
        self.passes = list(passes)
        self.name = name
        self.verify = _verifier() if verify else None
        self.dump_hook = dump_hook
        self.dump_pass_re = re.compile(dump_pass_re) if dump_pass_re else None
        self.timings: dict[str, float] = {}
        self.history: list[tuple[str, bool]] = []  # (pass name, changed) in run order

    def run(self, module: Module) -> bool:
        """Run every pass on `module` (in place); True if any changed it."""
        changed = False
        for item in self.passes:
            if isinstance(item, FixedPoint):
                changed |= self._run_fixed_point(module, item)
            else:
                changed |= self._run_pass(module, item)
        return changed

    def _run_fixed_point(self, module: Module, group: FixedPoint) -> bool:
        # A pass that found nothing to do is not run again until another pass changes the
        # module (passes are deterministic): the same result as rerunning whole rounds
        # until one changes nothing, without the repeated no-op runs.
        changed = False
        clean: set[int] = set()  # indices of passes that ran on the current module unchanged
        for _ in range(group.max_iters):
            round_changed = False
            for k, p in enumerate(group.passes):
                if k in clean:
                    continue
                if self._run_pass(module, p):
                    round_changed = True
                    clean = set()
                else:
                    clean.add(k)
                if len(clean) == len(group.passes):
                    break
            changed |= round_changed
            if len(clean) == len(group.passes):
                break
        return changed

    def _run_pass(self, module: Module, p) -> bool:
        start = time.perf_counter()
        try:
            changed = bool(p.run(module))
        except Exception as e:
            raise PassFailure(f"pass {p.name} failed on module {module.name}: {e}") from e
        spent = time.perf_counter() - start
        self.timings[p.name] = self.timings.get(p.name, 0.0) + spent
        if trace_events.ACTIVE:
            trace_events.add(f"pass {p.name}", "pass", start, spent, {"changed": changed})
        self.history.append((p.name, changed))
        if changed and self.verify is not None:
            try:
                self.verify(module)
            except Exception as e:
                raise PassFailure(f"module {module.name} is invalid after pass {p.name}: "
                                  f"{e}") from e
        self._after_pass(module, p.name, changed)
        return changed

    def _after_pass(self, module: Module, name: str, changed: bool) -> None:
        index = len(self.history)
        if self.dump_hook is not None and (self.dump_pass_re is None
                                           or self.dump_pass_re.search(name)):
            self.dump_hook(module, name, index)
        if debug_level() >= 3:
            status = "changed" if changed else "unchanged"
            print(f"--- {module.name}: HLO after pass {index} {name} ({status}) ---\n"
                  f"{module_to_text(module)}", file=sys.stderr)


def write_pass_dump(directory: str) -> Callable[[Module, str, int], None]:
    """A dump hook writing `<module>.<index>.<pass>.hlo.txt` files into `directory`."""

    def hook(module: Module, pass_name: str, index: int) -> None:
        os.makedirs(directory, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{module.name}.{index:04d}.{pass_name}")
        with open(os.path.join(directory, safe + ".hlo.txt"), "w") as f:
            f.write(module_to_text(module))

    return hook


def import_passes() -> list:
    """The passes that give a module read from XLA's text (layouts, async pairs, XLA's
    fusions) the meaning minijax's backends assume; they start every pipeline, and
    `run_hlo --no-opt` runs only these."""
    from minijax.compiler.passes.async_to_sync import AsyncToSync
    from minijax.compiler.passes.call_inliner import CallInliner
    from minijax.compiler.passes.dce import DeadCodeElimination
    from minijax.compiler.passes.layout_normalization import LayoutNormalization
    return [LayoutNormalization(), AsyncToSync(), CallInliner(), DeadCodeElimination()]


def default_passes(options: CompileOptions) -> list:
    """The pass list for `options.opt_level` (see the module docstring)."""
    # Lazy: importing this module (CompileOptions, a cache hit) must not load the passes.
    from minijax.compiler.passes.algebraic_simplifier import AlgebraicSimplifier
    from minijax.compiler.passes.buffer_assignment import BufferAssignmentPass
    from minijax.compiler.passes.constant_folding import ConstantFolding
    from minijax.compiler.passes.cse import CommonSubexpressionElimination
    from minijax.compiler.passes.dce import DeadCodeElimination
    from minijax.compiler.passes.dot_canonicalization import DotCanonicalization
    from minijax.compiler.passes.fusion import Fusion
    from minijax.compiler.passes.layout_assignment import LayoutAssignment
    from minijax.compiler.passes.loop_dot_hoisting import LoopDotHoisting
    from minijax.compiler.passes.row_fusion import RowFusion
    from minijax.compiler.passes.transpose_folding import TransposeFolding
    passes: list = import_passes()
    if options.opt_level >= 1:
        passes.append(FixedPoint([AlgebraicSimplifier(), TransposeFolding(),
                                  ConstantFolding(), CommonSubexpressionElimination(),
                                  DeadCodeElimination()], name="simplify"))
        passes += [LoopDotHoisting(), DeadCodeElimination()]
    passes.append(DotCanonicalization())
    if options.opt_level >= 1:
        passes.append(FixedPoint([AlgebraicSimplifier(), CommonSubexpressionElimination(),
                                  DeadCodeElimination()], name="cleanup"))
    if options.opt_level >= 2 and options.fuse:
        passes += [Fusion(), DeadCodeElimination(), RowFusion(), DeadCodeElimination()]
    passes += [LayoutAssignment(), BufferAssignmentPass()]
    return passes


def optimize(module: Module, options: CompileOptions | None = None,
             dump_hook: Callable[[Module, str, int], None] | None = None,
             passes: list | None = None) -> Module:
    """Optimize `module` in place for `options` and return it.

    `passes`: the pass list (a backend's `Backend.passes(options)`); default_passes when
    None. Per-pass dumps go to `dump_hook`, or, when options.dump_to and
    options.dump_pass_re are both set, to files in options.dump_to."""
    options = options or CompileOptions()
    if dump_hook is None and options.dump_to and options.dump_pass_re:
        dump_hook = write_pass_dump(options.dump_to)
    pipeline = Pipeline(default_passes(options) if passes is None else passes,
                        verify=options.verify, dump_hook=dump_hook,
                        dump_pass_re=options.dump_pass_re)
    module.fusion_log = []
    pipeline.run(module)
    module.pass_timings = dict(pipeline.timings)
    return module
