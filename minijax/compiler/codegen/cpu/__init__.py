"""CPU code generation: the loop nests and kernel ABI around the shared elemental emitter
(loops.py), row-fused kernels (row_loops.py), dot loops (dot_loops.py) and the
ahead-of-time program emitter (aot_program.py)."""
