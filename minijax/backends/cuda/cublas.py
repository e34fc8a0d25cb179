"""cuBLAS through ctypes, loaded on first use: GEMMs for dot.

The library is found by name (libcublas.so.13/12/11 or the system's libcublas), else in
the `nvidia-cublas` wheel's lib folder. Every GEMM is one cublasGemmStridedBatchedEx call
on the device's stream. float32 products compute in float32 (CUBLAS_COMPUTE_32F with the
default math mode: no TF32, JAX's default precision); float16/bfloat16 products accumulate
in float32; float64 in float64.

cuBLAS is column-major; a row-major C = op(A) op(B) is computed as the column-major
C^T = op(B)^T op(A)^T, i.e. with A and B swapped and the same trans flags.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib.util
import os

from minijax.backends.cuda.device_runtime import GemmSpec

_NAMES = ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so")
_DATA_TYPES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 14}        # cudaDataType
_COMPUTE_32F, _COMPUTE_64F = 68, 70                              # cublasComputeType_t
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1


def find_cublas() -> str | None:
    """A path or soname of libcublas that loads, or None."""
    candidates = list(_NAMES)
    found = ctypes.util.find_library("cublas")
    if found:
        candidates.append(found)
    spec = importlib.util.find_spec("nvidia") if importlib.util.find_spec("nvidia") else None
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            candidates += sorted(glob.glob(os.path.join(root, "cublas", "lib", "libcublas.so*")))
    for name in candidates:
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    return None


class Cublas:
    """A cuBLAS handle bound to one stream."""

    def __init__(self, lib, handle):
        self.lib, self.handle = lib, handle

    @classmethod
    def create(cls, stream):
        """A handle on `stream`, or False when cuBLAS cannot be loaded."""
        path = find_cublas()
        if path is None:
            return False
        lib = ctypes.CDLL(path)
        handle = ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(handle)) != 0:
            return False
        lib.cublasSetStream_v2(handle, ctypes.c_void_p(int(stream)))
        return cls(lib, handle)

    def gemm(self, spec: GemmSpec, a: int, b: int, c: int) -> bool:
        """Run `spec` on device addresses a, b, c (False for unsupported types)."""
        if spec.dtype not in _DATA_TYPES or spec.out_dtype not in _DATA_TYPES:
            return False
        f64 = spec.dtype == "f64"
        scalar = ctypes.c_double if f64 else ctypes.c_float
        alpha, beta = scalar(1.0), scalar(0.0)
        m, n, k = spec.m, spec.n, spec.k
        lda = m if spec.trans_a else k
        ldb = k if spec.trans_b else n
        status = self.lib.cublasGemmStridedBatchedEx(
            self.handle, _OP_T if spec.trans_b else _OP_N, _OP_T if spec.trans_a else _OP_N,
            n, m, k, ctypes.byref(alpha),
            ctypes.c_void_p(b), _DATA_TYPES[spec.dtype], ldb, ctypes.c_longlong(k * n),
            ctypes.c_void_p(a), _DATA_TYPES[spec.dtype], lda, ctypes.c_longlong(m * k),
            ctypes.byref(beta),
            ctypes.c_void_p(c), _DATA_TYPES[spec.out_dtype], n, ctypes.c_longlong(m * n),
            spec.batch, _COMPUTE_64F if f64 else _COMPUTE_32F, _GEMM_DEFAULT)
        if status != 0:
            raise RuntimeError(f"cublasGemmStridedBatchedEx failed with status {status} "
                               f"for {spec}")
        return True


__all__ = ["Cublas", "find_cublas"]
