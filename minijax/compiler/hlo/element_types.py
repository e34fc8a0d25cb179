"""XLA's element types: their names ("f32", "bf16", "s4") and the numpy dtypes that hold
them (re-exported by ir.py, which the rest of the compiler imports them from)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

# XLA element type name -> numpy dtype (bf16: ml_dtypes' bfloat16, as JAX's).
ELEMENT_TYPES: dict[str, np.dtype] = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "c64": np.dtype(np.complex64),
    "c128": np.dtype(np.complex128),
}
# Sub-byte integers and the 8-bit (and smaller) floats, one byte per element as ml_dtypes
# stores them. The parser and the evaluator handle them; code generators fall back to the
# evaluator for them (arithmetic runs in a wide type and rounds back after every op).
NARROW_ELEMENT_TYPES: dict[str, np.dtype] = {
    "s2": np.dtype(ml_dtypes.int2),
    "u2": np.dtype(ml_dtypes.uint2),
    "s4": np.dtype(ml_dtypes.int4),
    "u4": np.dtype(ml_dtypes.uint4),
    "f4e2m1fn": np.dtype(ml_dtypes.float4_e2m1fn),
    "f8e3m4": np.dtype(ml_dtypes.float8_e3m4),
    "f8e4m3": np.dtype(ml_dtypes.float8_e4m3),
    "f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8e4m3b11fnuz": np.dtype(ml_dtypes.float8_e4m3b11fnuz),
    "f8e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "f8e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "f8e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
}
ELEMENT_TYPES.update(NARROW_ELEMENT_TYPES)
_DTYPE_TO_ELEMENT_TYPE = {v: k for k, v in ELEMENT_TYPES.items()}


def element_type_of(dtype) -> str:
    """The XLA element type name for a numpy dtype (float32 -> "f32")."""
    return _DTYPE_TO_ELEMENT_TYPE[np.dtype(dtype)]


def numpy_dtype(element_type: str) -> np.dtype:
    """The numpy dtype that holds an XLA element type."""
    return ELEMENT_TYPES[element_type]
