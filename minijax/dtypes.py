"""Dtypes and JAX's type promotion lattice, with weak types for Python scalars.

The lattice (JAX's "type promotion semantics"):

    b1 -> i*;  i* -> u8, i8;  u8 -> u16, i16;  u16 -> u32, i32;  u32 -> u64, i64;
    u64 -> f*;  i8 -> i16 -> i32 -> i64 -> f*;  f* -> f16, bf16, c*;  f16 -> f32;
    bf16 -> f32;  f32 -> f64, c64;  f64 -> c128;  c* -> c64 -> c128

i*, f*, c* are the weak (Python scalar) types. The promoted type of several values is the
least upper bound of their lattice nodes; when it is weak, the result takes the default
dtype of that kind and stays weakly typed. With x64 disabled (JAX's default) 64-bit types
are canonicalized to their 32-bit counterparts.

bfloat16 is ml_dtypes' NumPy dtype (as JAX's). NumPy gives it kind "V", so code asks
`kind(dtype)` (or the is_* helpers here) rather than `dtype.kind`.
"""

from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from minijax.config import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32,
                                                       np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
# JAX's 8-bit floats (ml_dtypes' types): storage types with no implicit promotion to any
# other float (JAX's lattice puts each directly above the weak float type, with nothing
# above it); arithmetic on them runs in float32 and rounds back.
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = np.dtype(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e3m4 = np.dtype(ml_dtypes.float8_e3m4)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
                 float8_e4m3b11fnuz, float8_e4m3, float8_e3m4, float8_e8m0fnu)
_FLOAT8 = frozenset(FLOAT8_DTYPES)
# ml_dtypes' float types, which NumPy gives kind "V".
_ML_FLOATS = frozenset((bfloat16, *FLOAT8_DTYPES))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# JAX's dtype of the trivial tangents and gradients of integer and boolean values (zero bytes
# per element); such gradients are NumPy arrays, never minijax Arrays.
float0 = np.dtype([("float0", np.void, 0)])

SUPPORTED_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                    bfloat16, float16, float32, float64, complex64, complex128, *FLOAT8_DTYPES)
_SUPPORTED = frozenset(SUPPORTED_DTYPES)

_CANONICAL_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

# Lattice nodes are dtypes or the weak kinds below.
I_WEAK, F_WEAK, C_WEAK = "i*", "f*", "c*"
_LATTICE_UP = {
    bool_: [I_WEAK],
    I_WEAK: [uint8, int8],
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64],
    uint64: [F_WEAK],
    int8: [int16], int16: [int32], int32: [int64], int64: [F_WEAK],
    F_WEAK: [float16, bfloat16, C_WEAK, *FLOAT8_DTYPES],
    **{f8: [] for f8 in FLOAT8_DTYPES},
    float16: [float32], bfloat16: [float32], float32: [float64, complex64], float64: [complex128],
    C_WEAK: [complex64], complex64: [complex128], complex128: [],
}


@functools.cache
def _ancestors(node) -> frozenset:
    out = {node}
    for parent in _LATTICE_UP[node]:
        out |= _ancestors(parent)
    return frozenset(out)


@functools.cache
def _least_upper_bound(nodes: frozenset):
    common = frozenset.intersection(*(_ancestors(n) for n in nodes))
    # The least element of `common` is the one whose ancestors cover all of `common`.
    for candidate in common:
        if _ancestors(candidate) == common:
            return candidate
    names = tuple(sorted(map(str, nodes)))
    if any(n in _FLOAT8 for n in nodes):
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
            "unintended promotion, 8-bit floats do not support implicit promotion. If you'd "
            "like your inputs to be promoted to another type, you can do so explicitly using "
            "e.g. x.astype('float32')")
    raise TypeError(f"no common type for {list(names)}")


class TypePromotionError(ValueError):
    """A promotion JAX forbids (8-bit floats mixed with other floats): JAX's
    ``jax.dtypes.TypePromotionError``, a ValueError."""


_warned_x64: set = set()


def canonicalize_dtype(dtype, *, warn: bool = False) -> np.dtype:
    """Map a dtype to the one minijax uses: 64-bit types become 32-bit unless x64 is on."""
    dtype = as_dtype(dtype)
    if dtype not in _SUPPORTED:
        raise TypeError(f"minijax does not support dtype {dtype}. Supported dtypes: "
                        + ", ".join(str(d) for d in SUPPORTED_DTYPES))
    if not config.jax_enable_x64 and dtype in _CANONICAL_32:
        new = _CANONICAL_32[dtype]
        if warn and dtype not in _warned_x64:
            _warned_x64.add(dtype)
            warnings.warn(
                f"Explicitly requested dtype {dtype} requested in array is not available, "
                f"and will be truncated to dtype {new}. To enable more dtypes, set the "
                "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
                "environment variable: minijax.config.update('jax_enable_x64', True).",
                UserWarning, stacklevel=3)
        return new
    return dtype


def as_dtype(dtype) -> np.dtype:
    """np.dtype(dtype), also for the names "bfloat16", "float8_e4m3fn", ... (ml_dtypes' types,
    which NumPy knows by name only once registered) and ml_dtypes' scalar types."""
    if isinstance(dtype, str):
        if dtype in ("bfloat16", "bf16"):
            return bfloat16
        if dtype in _ML_FLOAT_NAMES:
            return _ML_FLOAT_NAMES[dtype]
    return np.dtype(dtype)


_ML_FLOAT_NAMES = {d.name: d for d in FLOAT8_DTYPES}


def kind(dtype) -> str:
    """NumPy's kind character of a dtype, with "f" for bfloat16 and the 8-bit floats (which
    NumPy calls "V")."""
    dtype = np.dtype(dtype)
    return "f" if dtype in _ML_FLOATS else dtype.kind


def is_float8(dtype) -> bool:
    """One of JAX's 8-bit float types."""
    return np.dtype(dtype) in _FLOAT8


def is_16bit_float(dtype) -> bool:
    """float16 or bfloat16: the types whose reductions accumulate in float32."""
    return np.dtype(dtype) in (float16, bfloat16)


def upcast_16bit(dtype) -> np.dtype:
    """float32 for a 16-bit float type (the type JAX's reductions accumulate in), else dtype."""
    return float32 if is_16bit_float(dtype) else np.dtype(dtype)


def astype(x, dtype) -> np.ndarray:
    """x.astype(dtype) with XLA's rounding: values reach a 16-bit float through float32
    (JAX and XLA:CPU round a float64 twice: f16(1 + 2**-11 + 2**-40) == 1)."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if is_16bit_float(dtype) and x.dtype not in (float16, bfloat16, float32, bool_):
        x = x.astype(float32)
    return x.astype(dtype)


def default_int_dtype() -> np.dtype:
    return int64 if config.jax_enable_x64 else int32


def default_float_dtype() -> np.dtype:
    return float64 if config.jax_enable_x64 else float32


def default_complex_dtype() -> np.dtype:
    return complex128 if config.jax_enable_x64 else complex64


_WEAK_DEFAULTS = {I_WEAK: default_int_dtype, F_WEAK: default_float_dtype,
                  C_WEAK: default_complex_dtype}


def weak_kind(dtype) -> str:
    """The weak lattice node of a dtype's kind: int -> i*, float -> f*, complex -> c*."""
    k = kind(dtype)
    if k in "iu":
        return I_WEAK
    if k == "f":
        return F_WEAK
    if k == "c":
        return C_WEAK
    raise TypeError(f"no weak type for {dtype}")


def is_python_scalar(x) -> bool:
    return type(x) in (bool, int, float, complex)


def python_scalar_dtype(x) -> np.dtype:
    """The (canonical) dtype a Python scalar gets: bool, int32/64, float32/64, complex."""
    t = type(x)
    if t is bool:
        return bool_
    if t is int:
        return default_int_dtype()
    if t is float:
        return default_float_dtype()
    if t is complex:
        return default_complex_dtype()
    raise TypeError(f"not a Python scalar: {x!r}")


def dtype_and_weak(x) -> tuple[np.dtype, bool]:
    """(dtype, weak_type) of any array-like: Python scalars are weak (except bool)."""
    if is_python_scalar(x):
        return python_scalar_dtype(x), type(x) is not bool
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype, aval.weak_type
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize_dtype(x.dtype), False
    if isinstance(x, (list, tuple)):
        return canonicalize_dtype(np.asarray(x).dtype), False
    raise TypeError(f"{type(x).__name__} is not a valid minijax type")


def _lattice_node(dtype, weak: bool):
    if weak and dtype != bool_:
        return weak_kind(dtype)
    return np.dtype(dtype)


def promote_types(a, b) -> np.dtype:
    """jnp.promote_types: the promoted (strong) dtype of two dtypes."""
    node = _least_upper_bound(frozenset({as_dtype(a), as_dtype(b)}))
    return canonicalize_dtype(_node_dtype(node))


def _node_dtype(node) -> np.dtype:
    if isinstance(node, str):
        return _WEAK_DEFAULTS[node]()
    return node


def result_type_and_weak(*args) -> tuple[np.dtype, bool]:
    """Promoted dtype of the arguments and whether it stays weakly typed."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    nodes = set()
    for x in args:
        if isinstance(x, (np.dtype, type)) or (isinstance(x, str) and x not in ("i*", "f*")):
            nodes.add(as_dtype(x))
        else:
            dtype, weak = dtype_and_weak(x)
            nodes.add(_lattice_node(dtype, weak))
    node = _least_upper_bound(frozenset(nodes))
    return canonicalize_dtype(_node_dtype(node)), isinstance(node, str)


def result_type(*args) -> np.dtype:
    """jnp.result_type: the dtype JAX's promotion gives these arrays, scalars or dtypes."""
    return result_type_and_weak(*args)[0]


_BF16_SUPERTYPES = (np.floating, np.inexact, np.number, np.generic)


class extended(np.generic):  # noqa: N801 - JAX's name
    """Scalar type of dtypes that are not NumPy's (JAX's ``dtypes.extended``)."""


class prng_key(extended):  # noqa: N801 - JAX's name
    """Scalar type of typed PRNG key dtypes: ``issubdtype(key.dtype, dtypes.prng_key)``."""


def issubdtype(a, b) -> bool:
    """np.issubdtype with minijax's dtype objects (bfloat16 is a floating type; key dtypes
    are ``prng_key``, an ``extended`` type)."""
    a_type = getattr(a, "type", None)
    if isinstance(a_type, type) and issubclass(a_type, extended):
        return isinstance(b, type) and issubclass(a_type, b) or b is a or b == a
    if isinstance(b, type) and issubclass(b, extended):
        return False
    a_ml = _ml_float(a)
    if a_ml is not None:
        return _ml_float(b) == a_ml or (isinstance(b, type) and b in _BF16_SUPERTYPES)
    if _ml_float(b) is not None:
        return False
    return np.issubdtype(a, b)


def _ml_float(x):
    """The dtype of x when it names bfloat16 or an 8-bit float, else None."""
    if isinstance(x, type) and x in _BF16_SUPERTYPES:
        return None
    try:
        dtype = as_dtype(x)
    except TypeError:
        return None
    return dtype if dtype in _ML_FLOATS else None


def is_float(dtype) -> bool:
    return kind(dtype) == "f"


def is_inexact(dtype) -> bool:
    return kind(dtype) in "fc"


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def is_integer(dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def to_inexact(dtype) -> np.dtype:
    """The floating dtype that an integer/bool input becomes in float functions.

    As JAX: bool and integers of up to 32 bits become float32 (also with x64 enabled),
    64-bit integers float64 (float32 once canonicalized without x64)."""
    dtype = np.dtype(dtype)
    if kind(dtype) in "fc":
        return dtype
    if dtype.itemsize == 8:
        return canonicalize_dtype(np.float64)
    return np.dtype(np.float32)


def real_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def finfo(dtype):
    dtype = canonicalize_dtype(dtype)
    return ml_dtypes.finfo(dtype) if dtype in _ML_FLOATS else np.finfo(dtype)


def iinfo(dtype):
    return np.iinfo(canonicalize_dtype(dtype))


def short_name(dtype) -> str:
    """JAX's short dtype names: float32 -> f32, int32 -> i32, uint8 -> u8, bool -> bool."""
    dtype = np.dtype(dtype)
    if dtype == bool_:
        return "bool"
    if dtype == bfloat16:
        return "bf16"
    if dtype in _FLOAT8:
        return dtype.name
    return {"f": "f", "i": "i", "u": "u", "c": "c"}[dtype.kind] + str(dtype.itemsize * 8)


def itemsize_bits(dtype) -> int:
    """Bits per element of `dtype` (jax.dtypes.itemsize_bits): 4 for int4 and float4, 8 for
    bool (its storage), twice the component width for complex types."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return 8
    if dt.kind == "c":
        return 2 * int(np.finfo(dt).bits)
    for info in (ml_dtypes.iinfo, ml_dtypes.finfo):   # NumPy's types and ml_dtypes' ones
        try:
            return int(info(dt).bits)
        except (TypeError, ValueError):
            pass
    raise ValueError(f"unexpected input: dtype={dt}")
