"""The CPU backend ("cpu"): llvmlite-generated, vectorized, multithreaded kernels.

One folder per backend: backend.py (CpuBackend, CpuExecutable, the kernel side of program
planning), kernel.py (kernel launch objects), runtime.py (the LLVM JIT and object cache),
llvm_parts.py (splitting a module for parallel compilation), fastcall.py (METH_FASTCALL
entry points), blas.py and library.py (gemm, convolution), thread_pool.py. Loaded lazily
by minijax.backends.get_backend("cpu"); this package imports llvmlite.
"""

from minijax.backends.cpu.backend import (
    EVALUATOR_THUNK_OPCODES,
    PARALLEL_THRESHOLD,
    CpuBackend,
    CpuExecutable,
    create_backend,
    output_shapes,
)

__all__ = ["CpuBackend", "CpuExecutable", "EVALUATOR_THUNK_OPCODES", "PARALLEL_THRESHOLD",
           "create_backend", "output_shapes"]
