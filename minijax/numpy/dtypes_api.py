"""The dtype surface of minijax.numpy: scalar types usable as constructors (`jnp.float32(1)`
returns an Array), finfo/iinfo, result_type, promote_types, can_cast, issubdtype, constants.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from minijax import dtypes
from minijax.numpy import util
from minijax.numpy.creation import array


class _ScalarMeta(type):
    """Metaclass of jnp.float32 & co: they act as dtypes (np.dtype(jnp.float32) works,
    `x.dtype == jnp.float32`) and as constructors returning Arrays."""

    def __eq__(cls, other):
        # As JAX's: equal to itself, its NumPy scalar type and its np.dtype; never raises
        # (`jnp.float32 == "a string"`, `== {}`, `== None` and `jnp.float64 == float` are
        # False).
        if cls is other:
            return True
        if isinstance(other, _ScalarMeta):
            return cls.dtype == other.dtype
        try:
            equal = cls.dtype.type == other
        except Exception:
            return False
        return equal if type(equal) is bool else bool(isinstance(equal, np.bool_) and equal)

    def __ne__(cls, other):
        return not cls == other

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'minijax.numpy.{cls.__name__}'>"

    def __call__(cls, x=0):
        return array(x, dtype=cls.dtype)


def _scalar_type(name, np_type):
    return _ScalarMeta(name, (), {"dtype": np.dtype(np_type), "__module__": "minijax.numpy",
                                  "__doc__": f"The {name} dtype; calling it makes an Array."})


bool_ = _scalar_type("bool_", np.bool_)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", dtypes.bfloat16)
float8_e4m3fn = _scalar_type("float8_e4m3fn", dtypes.float8_e4m3fn)
float8_e5m2 = _scalar_type("float8_e5m2", dtypes.float8_e5m2)
float8_e4m3fnuz = _scalar_type("float8_e4m3fnuz", dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _scalar_type("float8_e5m2fnuz", dtypes.float8_e5m2fnuz)
float8_e4m3b11fnuz = _scalar_type("float8_e4m3b11fnuz", dtypes.float8_e4m3b11fnuz)
float8_e4m3 = _scalar_type("float8_e4m3", dtypes.float8_e4m3)
float8_e3m4 = _scalar_type("float8_e3m4", dtypes.float8_e3m4)
float8_e8m0fnu = _scalar_type("float8_e8m0fnu", dtypes.float8_e8m0fnu)
# ml_dtypes' sub-byte types, which JAX exports. minijax arrays cannot hold them yet: the
# names work as dtypes (np.dtype(jnp.int4), comparisons), and making an array of one
# raises minijax's "does not support dtype" TypeError.
int1 = _scalar_type("int1", ml_dtypes.int1)
int2 = _scalar_type("int2", ml_dtypes.int2)
int4 = _scalar_type("int4", ml_dtypes.int4)
uint1 = _scalar_type("uint1", ml_dtypes.uint1)
uint2 = _scalar_type("uint2", ml_dtypes.uint2)
uint4 = _scalar_type("uint4", ml_dtypes.uint4)
float4_e2m1fn = _scalar_type("float4_e2m1fn", ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type("float6_e2m3fn", ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type("float6_e3m2fn", ml_dtypes.float6_e3m2fn)
object_ = np.object_  # as JAX: NumPy's (minijax arrays never hold objects)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
# Aliases: JAX's int_/float_/complex_ follow the x64 flag at call time; these are 64-bit
# types that canonicalize to 32 bits when x64 is off, as in JAX.
int_ = _scalar_type("int_", np.int64)
uint = _scalar_type("uint", np.uint64)
float_ = _scalar_type("float_", np.float64)
complex_ = _scalar_type("complex_", np.complex128)
single, double = float32, float64
csingle, cdouble = complex64, complex128
half = float16

# Abstract scalar categories are NumPy's (for issubdtype).
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
complexfloating, integer = np.complexfloating, np.integer
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger
character, flexible = np.character, np.flexible

newaxis = None
pi = np.pi
e = np.e
inf = np.inf
nan = np.nan
euler_gamma = np.euler_gamma


def dtype(obj, align=False, copy=False):
    """np.dtype of `obj`, canonicalized to the dtypes minijax uses (32-bit without x64)."""
    if obj is None:
        return dtypes.default_float_dtype()
    if util.is_array(obj) or isinstance(obj, np.ndarray):
        return obj.dtype
    if dtypes.is_python_scalar(obj):
        return dtypes.python_scalar_dtype(obj)
    if obj is int or obj is float or obj is complex:
        return {int: dtypes.default_int_dtype, float: dtypes.default_float_dtype,
                complex: dtypes.default_complex_dtype}[obj]()
    return dtypes.canonicalize_dtype(obj)


def finfo(dtype_like):
    """Machine limits of a floating dtype (numpy.finfo of the canonical dtype; ml_dtypes'
    finfo for bfloat16)."""
    return dtypes.finfo(dtype(dtype_like))


def iinfo(int_type):
    """Machine limits of an integer dtype (numpy.iinfo of the canonical dtype)."""
    return np.iinfo(dtype(int_type))


def _dtype_or_value(x):
    if isinstance(x, _ScalarMeta):
        return x.dtype
    if isinstance(x, type) and x in (int, float, complex, bool):
        return np.dtype(x) if x is bool else {int: "i*", float: "f*", complex: "c*"}[x]
    return x


def result_type(*args):
    """The dtype JAX's type promotion gives these arrays, scalars or dtypes."""
    converted = []
    for a in args:
        a = _dtype_or_value(a)
        if isinstance(a, str) and a in ("i*", "f*", "c*"):
            converted.append({"i*": 0, "f*": 0.0, "c*": 0j}[a])
        else:
            converted.append(a)
    return dtypes.result_type(*converted)


def promote_types(a, b):
    """The promoted dtype of two dtypes (JAX's lattice, not NumPy's value-based rules)."""
    return result_type(a, b)


def can_cast(from_, to, casting="safe"):
    """numpy.can_cast on dtypes (arrays are taken by their dtype)."""
    if util.is_array(from_):
        from_ = from_.dtype
    return np.can_cast(np.dtype(_dtype_or_value(from_)), np.dtype(_dtype_or_value(to)),
                       casting=casting)


def issubdtype(arg1, arg2) -> bool:
    """numpy.issubdtype, accepting minijax's scalar types."""
    a = arg1.dtype if isinstance(arg1, _ScalarMeta) else arg1
    b = arg2.dtype.type if isinstance(arg2, _ScalarMeta) else arg2
    return bool(dtypes.issubdtype(a, b))


def isdtype(dtype_obj, kind) -> bool:
    """Array API isdtype: kind is a dtype, a kind name, or a tuple of them."""
    dt = np.dtype(_dtype_or_value(dtype_obj))
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
             "real floating": "f", "complex floating": "c", "numeric": "iufc"}
    for k in kinds:
        if isinstance(k, str):
            if k not in names:
                raise ValueError(f"Unrecognized kind {k!r}")
            if dtypes.kind(dt) in names[k]:
                return True
        elif dt == np.dtype(_dtype_or_value(k)):
            return True
    return False


def ndim(a) -> int:
    """Number of dimensions of an array-like."""
    return util.to_array(a).ndim if not util.is_array(a) else a.ndim


def shape(a) -> tuple:
    """Shape of an array-like."""
    return util.shape_of(a) if not isinstance(a, (list, tuple)) else np.shape(a)


def size(a, axis=None) -> int:
    """Number of elements (along `axis` if given)."""
    s = shape(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    return s[util.canonicalize_axis(axis, len(s))]
