"""The pass interface every HLO pass implements (compiler/pipeline.py runs them)."""

from __future__ import annotations


class Pass:
    """An HLO pass: a `name` (used in dumps, timings and `--dump_pass_re`) and
    `run(module) -> bool`, which transforms the module in place and returns True when it
    changed anything (the pipeline re-verifies only then, and fixed-point groups stop when
    no pass changes the module). A pass may attach to the module only the state declared in
    hlo/ir.py (e.g. `fusion_log`, `buffer_assignment`)."""

    name: str = ""

    def run(self, module) -> bool:
        raise NotImplementedError(f"pass {type(self).__name__} does not implement run()")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} pass {self.name!r}>"
