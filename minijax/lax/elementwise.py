"""Elementwise arithmetic primitives (template family: add, sub, mul, neg, sin, cos, exp).

Each block: the public wrapper, the primitive with abstract eval and NumPy impl, the JVP,
the transpose (linear primitives only), the batching rule and the HLO lowering.
"""

from __future__ import annotations

import numpy as np

from minijax import core
from minijax.compiler.lowering_registry import register_lowering
from minijax.interpreters import ad, batching
from minijax.lax.utils import (
    elementwise_batcher,
    promote_scalars,
    same_shape_dtype_rule,
    standard_primitive,
    unbroadcast_scalar,
)


def _unary(name, numpy_fn, hlo_opcode, kinds=None):
    prim = standard_primitive(
        name, lambda x: same_shape_dtype_rule(name, x, allowed_kinds=kinds), numpy_fn)
    batching.primitive_batchers[prim] = elementwise_batcher(prim)
    register_lowering(prim, _lower_as(hlo_opcode))
    return prim


def _binary(name, numpy_fn, hlo_opcode, kinds=None):
    prim = standard_primitive(
        name, lambda x, y: same_shape_dtype_rule(name, x, y, allowed_kinds=kinds), numpy_fn)
    batching.primitive_batchers[prim] = elementwise_batcher(prim)
    register_lowering(prim, _lower_as(hlo_opcode))
    return prim


def _lower_as(hlo_opcode):
    method = hlo_opcode.replace("-", "_")

    def rule(ctx, *operands):
        operands = ctx.broadcast_scalars(operands)
        return getattr(ctx.builder, method)(*operands, metadata=ctx.metadata)
    return rule


def _ct_for(ct, operand):
    """The cotangent of one operand of a linear elementwise op (summed if it was a scalar)."""
    return unbroadcast_scalar(ct, operand.aval)


# --------------------------------------------------------------------------- add / sub


def add(x, y):
    """Elementwise x + y (same shapes and dtypes; Python scalars are accepted)."""
    x, y = promote_scalars("add", x, y)
    return add_p.bind(x, y)


add_p = _binary("add", np.add, "add")


def _add_transpose(ct, x, y):
    if type(ct) is ad.Zero:
        return [None, None]
    return [_ct_for(ct, x) if ad.is_undefined_primal(x) else None,
            _ct_for(ct, y) if ad.is_undefined_primal(y) else None]


ad.deflinear(add_p, _add_transpose)


def sub(x, y):
    """Elementwise x - y."""
    x, y = promote_scalars("sub", x, y)
    return sub_p.bind(x, y)


sub_p = _binary("sub", np.subtract, "subtract")


def _sub_transpose(ct, x, y):
    if type(ct) is ad.Zero:
        return [None, None]
    return [_ct_for(ct, x) if ad.is_undefined_primal(x) else None,
            _ct_for(neg(ct), y) if ad.is_undefined_primal(y) else None]


ad.deflinear(sub_p, _sub_transpose)

# --------------------------------------------------------------------------- mul / neg


def mul(x, y):
    """Elementwise x * y."""
    x, y = promote_scalars("mul", x, y)
    return mul_p.bind(x, y)


mul_p = _binary("mul", np.multiply, "multiply")
ad.defjvp(mul_p, lambda t, x, y: mul_p.bind(t, y), lambda t, x, y: mul_p.bind(x, t))


def _mul_transpose(ct, x, y):
    if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
        raise ValueError("mul: transpose of a product of two linear values (not linear)")
    if type(ct) is ad.Zero:
        return [None, None]
    if ad.is_undefined_primal(x):
        return [_ct_for(mul_p.bind(ct, y), x), None]
    return [None, _ct_for(mul_p.bind(x, ct), y)]


ad.primitive_transposes[mul_p] = _mul_transpose


def neg(x):
    """Elementwise -x."""
    return neg_p.bind(x)


neg_p = _unary("neg", np.negative, "negate")
ad.deflinear(neg_p, lambda ct, x: [ad.Zero(x.aval) if type(ct) is ad.Zero else neg(ct)])

# --------------------------------------------------------------------------- transcendental


def sin(x):
    """Elementwise sine."""
    return sin_p.bind(x)


def cos(x):
    """Elementwise cosine."""
    return cos_p.bind(x)


def exp(x):
    """Elementwise e**x."""
    return exp_p.bind(x)


sin_p = _unary("sin", np.sin, "sine", kinds="fc")
cos_p = _unary("cos", np.cos, "cosine", kinds="fc")
exp_p = _unary("exp", np.exp, "exponential", kinds="fc")
ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp2(exp_p, lambda t, ans, x: mul(t, ans))

# --------------------------------------------------------------------------- add_any

# add_any adds tangents/cotangents (JAX's add_jaxvals); it lowers like add.
add_any_p = _binary("add_any", np.add, "add")
ad.deflinear(add_any_p, lambda ct, x, y: [_ct_for(ct, x), _ct_for(ct, y)])


def _zeros_like_aval(aval):
    from minijax.lax.structural import broadcast_in_dim
    from minijax.lax.utils import weak_scalar
    zero = weak_scalar(0, aval.dtype)
    zero.aval = zero.aval.update(weak_type=aval.weak_type)
    return broadcast_in_dim(zero, aval.shape, ())


core.zeros_like_aval = _zeros_like_aval
core.add_any = add_any_p.bind
