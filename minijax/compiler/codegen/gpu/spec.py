"""What the runtime needs to run a generated GPU kernel: its launches and scratch bytes."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Threads per block of the loop and transpose kernels.
BLOCK = 256
#: Grid cap of grid-stride loops (about 8 waves of 256-thread blocks on a 132-SM H100).
MAX_GRID = 4096


@dataclass
class Launch:
    """One kernel launch: function name, blocks and threads per block (x dimension)."""

    function: str
    grid: int
    block: int


@dataclass
class GpuKernel:
    """The launches that compute one fused computation, in order, and the scratch bytes
    (partials of two-stage reductions) the runtime passes to each of them."""

    name: str
    mode: str
    launches: list[Launch]
    num_params: int
    output_shapes: list
    scratch_bytes: int = 0
    notes: list[str] = field(default_factory=list)


def grid_for(work: int, block: int = BLOCK) -> int:
    """Blocks for `work` items at `block` per block, capped at MAX_GRID (grid-stride)."""
    return max(1, min(MAX_GRID, -(-work // block)))
