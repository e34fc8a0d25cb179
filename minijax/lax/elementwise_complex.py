"""Complex-number primitives: real, imag, conj and complex.

Each block: the public wrapper, the primitive with abstract eval and NumPy impl, the JVP and
transpose (all four are linear, with JAX's conventions for complex cotangents), the batching
rule and the HLO lowering.
"""

from __future__ import annotations

import numpy as np

from minijax.array import Array
from minijax.compiler.lowering_registry import register_lowering
from minijax.core import get_aval
from minijax.interpreters import ad, batching
from minijax.lax.elementwise import (
    _ct_for,
    _lower_as,
    _real_dtype,
    _typed_unary,
    elementwise_batcher,
    neg,
    out_aval,
)
from minijax.lax.structural import broadcast_in_dim
from minijax.lax.utils import promote_scalars, same_shape_dtype_rule, standard_primitive

# --------------------------------------------------------------------------- complex parts


def real(x):
    """Real part of a complex array."""
    return real_p.bind(x)


def imag(x):
    """Imaginary part of a complex array."""
    return imag_p.bind(x)


real_p = _typed_unary("real", lambda x: np.real(x).copy(), "real", _real_dtype, "c")
imag_p = _typed_unary("imag", lambda x: np.imag(x).copy(), "imag", _real_dtype, "c")
def _strong_zeros(ct):
    """Zeros like ct, strongly typed (as JAX's real/imag transposes: a weak real cotangent
    gives a strong complex one)."""
    aval = get_aval(ct)
    return broadcast_in_dim(Array(np.zeros((), aval.dtype)), aval.shape, ())


ad.deflinear(real_p, lambda ct, x: [
    ad.Zero(x.aval) if type(ct) is ad.Zero else complex(ct, _strong_zeros(ct))])
ad.deflinear(imag_p, lambda ct, x: [
    ad.Zero(x.aval) if type(ct) is ad.Zero else complex(_strong_zeros(ct), neg(ct))])


def _complex_dtype(dtype):
    if dtype.kind == "c":
        return dtype
    return np.dtype(np.complex128 if dtype == np.float64 else np.complex64)


def complex(x, y):  # noqa: A001 - JAX's name
    """Elementwise x + 1j * y from float32/float64 parts."""
    x, y = promote_scalars("complex", x, y)
    return complex_p.bind(x, y)


def _complex_abstract_eval(x, y):
    aval = same_shape_dtype_rule("complex", x, y, allowed_kinds="f")
    if aval.dtype not in (np.float32, np.float64):
        raise TypeError(f"complex requires float32 or float64 parts, got "
                        f"{x.str_short()}, {y.str_short()}")
    return aval.update(dtype=_complex_dtype(aval.dtype))


def _complex_impl(x, y):
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    out = np.empty(x.shape, _complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return out


complex_p = standard_primitive("complex", _complex_abstract_eval, _complex_impl)
batching.primitive_batchers[complex_p] = elementwise_batcher(complex_p)
register_lowering(complex_p, _lower_as("complex"))


def _complex_transpose(ct, x, y):
    if type(ct) is ad.Zero:
        return [None, None]
    return [_ct_for(real(ct), x) if ad.is_undefined_primal(x) else None,
            _ct_for(imag(neg(ct)), y) if ad.is_undefined_primal(y) else None]


ad.deflinear(complex_p, _complex_transpose)


def conj(x):
    """Complex conjugate (a real input gives a complex result, as JAX's lax.conj)."""
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)


def _conj_abstract_eval(x, *, input_dtype):
    aval = same_shape_dtype_rule("conj", x, allowed_kinds="fc")
    return aval.update(dtype=_complex_dtype(aval.dtype))


def _conj_impl(x, *, input_dtype):
    x = np.asarray(x)
    return np.conj(x.astype(_complex_dtype(x.dtype)))


def _conj_lower(ctx, x, *, input_dtype):
    b, md = ctx.builder, ctx.metadata
    if np.dtype(input_dtype).kind != "c":
        return b.convert(x, ctx.element_type(out_aval(ctx).dtype), metadata=md)
    return b.complex(b.real(x, metadata=md), b.negate(b.imag(x, metadata=md), metadata=md),
                     metadata=md)


def _conj_transpose(ct, x, *, input_dtype):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    if np.dtype(input_dtype).kind == "c":
        return [conj(ct)]
    return [real(ct)]


conj_p = standard_primitive("conj", _conj_abstract_eval, _conj_impl)
batching.primitive_batchers[conj_p] = elementwise_batcher(conj_p)
register_lowering(conj_p, _conj_lower)
ad.deflinear(conj_p, _conj_transpose)
