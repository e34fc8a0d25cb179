"""GPU code generation: the shared elemental emitter mapped onto an NVIDIA grid.

- nvvm.py: special registers, barriers, warp shuffles, shared memory, kernel annotations;
- function.py: one kernel function (ABI, thread indices, warp/block reductions);
- kernels.py / reductions.py: loop, tiled-transpose, row/column/full and row-fused
  reduction kernels for a fused computation (`emit_gpu_kernel`);
- ptx.py: LLVM IR -> PTX through llvmlite's NVPTX target, ptxas, the per-arch disk cache;
- emulate.py: runs the same kernel module on the host CPU over the whole grid (tests).
Importing this package imports llvmlite (the backend imports it lazily), never cuda-python.
"""
