"""The threefry2x32 counter-based hash as a primitive, and the threefry2x32 PRNG built on
it (JAX's default `jax.random` implementation).

threefry2x32(k0, k1, x0, x1) -> (y0, y1) applies Threefry-2x32 with 20 rounds (Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3", SC'11; the Random123 library) to every
element: (k0, k1) is the key and (x0, x1) the 64-bit counter, all uint32. The rules: NumPy
impl (wrapping uint32 arithmetic), abstract eval, batching (elementwise), a zero JVP (the
outputs are integers) and an HLO lowering that unrolls the 20 rounds into u32 add / xor /
shift-left / shift-right-logical / or instructions.

The PRNG functions below (seed, split, fold_in, random_bits) operate on raw uint32[2] keys
and follow JAX's default configuration, `jax_threefry_partitionable=True` (the default since
JAX 0.5): split and random_bits hash the 64-bit iota of the output shape, given as its
(high, low) uint32 halves, with the key, so element i of a result never depends on the
result's size.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from minijax.compiler.lowering_registry import register_lowering
from minijax.config import config
from minijax.core import ShapedArray, get_aval
from minijax.dispatch import compile_when_large
from minijax.interpreters import ad, batching
from minijax.lax import elementwise, elementwise_int, slicing, structural
from minijax.lax.elementwise import elementwise_batcher
from minijax.lax.utils import shapes_text, standard_primitive

# Rotation constants R_{2x32} of Threefry-2x32 (round r uses ROTATIONS[r % 8]) and the key
# schedule parity constant C240 of Threefish.
ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
KS_PARITY = 0x1BD11BDA
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


def threefry2x32_reference(k0, k1, x0, x1, rounds: int = 20):
    """Threefry-2x32 in NumPy uint32 arithmetic with any number of rounds (Random123's
    `threefry2x32_R`): a key injection follows every 4th round. Arguments broadcast."""
    k0, k1, x0, x1 = (np.asarray(a, dtype=np.uint32) for a in (k0, k1, x0, x1))
    with np.errstate(over="ignore"):
        return _rounds(k0, k1, x0, x1, rounds)


def _rounds(k0, k1, x0, x1, rounds):
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(KS_PARITY))
    y0 = x0 + ks[0]
    y1 = x1 + ks[1]
    for r in range(rounds):
        rot = ROTATIONS[r % 8]
        y0 = y0 + y1
        y1 = (y1 << np.uint32(rot)) | (y1 >> np.uint32(32 - rot))
        y1 = y1 ^ y0
        if r % 4 == 3:
            s = (r + 1) // 4
            y0 = y0 + ks[s % 3]
            y1 = y1 + ks[(s + 1) % 3] + np.uint32(s)
    return y0, y1


# --------------------------------------------------------------------------- threefry2x32


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds) of the counters (x0, x1) under the key (k0, k1).

    All four operands are uint32 arrays of one shape (rank-0 operands broadcast). Returns
    the two uint32 output words.
    """
    return threefry2x32_p.bind(k0, k1, x0, x1)


def _threefry2x32_abstract_eval(*avals):
    if any(a.dtype != np.uint32 for a in avals):
        raise TypeError(f"threefry2x32 requires uint32 arguments, got {shapes_text(avals)}")
    shapes = {a.shape for a in avals if a.shape}
    if len(shapes) > 1:
        raise TypeError("threefry2x32 requires arguments of equal shapes (or scalars), got "
                        f"{shapes_text(avals)}")
    shape = shapes.pop() if shapes else ()
    return [ShapedArray(shape, np.uint32)] * 2


def _threefry2x32_impl(k0, k1, x0, x1):
    y0, y1 = threefry2x32_reference(k0, k1, x0, x1, 20)
    shape = np.broadcast_shapes(*(np.shape(a) for a in (k0, k1, x0, x1)))
    return [np.broadcast_to(y0, shape).copy(), np.broadcast_to(y1, shape).copy()]


threefry2x32_p = standard_primitive("threefry2x32", _threefry2x32_abstract_eval,
                                    _threefry2x32_impl, multiple_results=True)
compile_when_large(threefry2x32_p)  # 20 NumPy passes per round: slow for large draws
ad.defjvp_zero(threefry2x32_p)
batching.primitive_batchers[threefry2x32_p] = elementwise_batcher(threefry2x32_p)


def _threefry2x32_lowering(ctx, k0, k1, x0, x1):
    """One multi-output loop fusion computing both words (the 20 rounds unrolled into u32
    add / xor / shift / or inside it), so the fusion pass sees threefry as one node, as
    XLA sees JAX's threefry2x32 custom call on GPU: its chain of ~120 multi-user integer
    ops, left in the program, was copied into many consumer fusions and cut into dozens
    of tiny kernels at the fusion size cap."""
    md = ctx.metadata
    dims = ctx.avals_out[0].shape
    body = ctx.new_computation("threefry2x32")
    operands = list({id(op): op for op in (k0, k1, x0, x1)}.values())  # a fusion's are distinct
    params = {id(op): body.parameter(i, op.shape, metadata=md) for i, op in enumerate(operands)}
    y0, y1 = _threefry2x32_rounds(body, [params[id(op)] for op in (k0, k1, x0, x1)], dims, md)
    body.set_root(body.tuple([y0, y1], metadata=md))
    fused = ctx.builder.fusion(operands, body.computation, "kLoop", metadata=md)
    return [ctx.builder.get_tuple_element(fused, i, metadata=md) for i in (0, 1)]


def _threefry2x32_rounds(b, operands, dims, md):
    """The HLO of Threefry-2x32's 20 rounds on `operands` (k0, k1, x0, x1; rank-0 ones are
    broadcast to `dims`), built with builder `b`."""
    k0, k1, x0, x1 = (b.broadcast(op, dims, (), metadata=md) if dims and not op.shape.dims
                      else op for op in operands)

    def const(value):
        c = b.constant(np.uint32(value), np.uint32, metadata=md)
        return b.broadcast(c, dims, (), metadata=md) if dims else c

    ks = (k0, k1, b.xor(b.xor(k0, k1, metadata=md), const(KS_PARITY), metadata=md))
    y0 = b.add(x0, ks[0], metadata=md)
    y1 = b.add(x1, ks[1], metadata=md)
    for r in range(20):
        rot = ROTATIONS[r % 8]
        y0 = b.add(y0, y1, metadata=md)
        rotated = b.or_(b.shift_left(y1, const(rot), metadata=md),
                        b.shift_right_logical(y1, const(32 - rot), metadata=md), metadata=md)
        y1 = b.xor(rotated, y0, metadata=md)
        if r % 4 == 3:
            s = (r + 1) // 4
            y0 = b.add(y0, ks[s % 3], metadata=md)
            y1 = b.add(b.add(y1, ks[(s + 1) % 3], metadata=md), const(s), metadata=md)
    return y0, y1


register_lowering(threefry2x32_p, _threefry2x32_lowering)


# --------------------------------------------------------------------------- PRNG functions


@functools.cache
def _lax():
    """The lax operations the PRNG functions use (imported late: sibling modules)."""

    class _Ops:
        reshape = staticmethod(structural.reshape)
        iota = staticmethod(structural.iota)
        full = staticmethod(structural.full)
        convert_element_type = staticmethod(structural.convert_element_type)
        slice = staticmethod(slicing.slice)
        concatenate = staticmethod(slicing.concatenate)
        broadcasted_iota = staticmethod(structural.broadcasted_iota)
        broadcast_in_dim = staticmethod(structural.broadcast_in_dim)
        mul = staticmethod(elementwise.mul)
        bitwise_and = staticmethod(elementwise_int.bitwise_and)
        bitwise_or = staticmethod(elementwise_int.bitwise_or)
        bitwise_xor = staticmethod(elementwise_int.bitwise_xor)
        shift_left = staticmethod(elementwise_int.shift_left)
        shift_right_logical = staticmethod(elementwise_int.shift_right_logical)
    return _Ops


def _u32(value):
    return np.uint32(value)


def _key_words(key):
    """The two uint32 scalars of a raw key of shape (2,)."""
    lax = _lax()
    k0 = lax.reshape(lax.slice(key, (0,), (1,)), ())
    k1 = lax.reshape(lax.slice(key, (1,), (2,)), ())
    return k0, k1


def iota_2x32_shape(shape):
    """The row-major uint64 iota of `shape` as its (high, low) uint32 halves (as JAX's
    `prng.iota_2x32_shape`)."""
    lax = _lax()
    shape = tuple(shape)
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError(f"random bits of shape {shape} ({size} elements): more than "
                                  "2**32 elements are not supported")
    hi = lax.full(shape, _u32(0), np.uint32)
    if not shape:
        return hi, hi
    lo = lax.reshape(lax.iota(np.uint32, size), shape)
    return hi, lo


def threefry_seed(seed):
    """The raw key uint32[2] of an integer seed (a scalar array): the high and low 32 bits
    of the seed as a 64-bit integer; 32-bit (or narrower) seeds have a zero high word."""
    lax = _lax()
    aval = get_aval(seed)
    if aval.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {aval.str_short()}.")
    if aval.dtype.kind not in "iu":
        raise TypeError(f"PRNG key seed must be an integer; got {aval.str_short()}")
    if aval.dtype.itemsize > 4:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed, np.array(32, aval.dtype)), np.uint32)
    else:
        hi = lax.full((), _u32(0), np.uint32)
    lo = lax.convert_element_type(seed, np.uint32)
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _stack_last(a, b):
    lax = _lax()
    shape = get_aval(a).shape + (1,)
    return lax.concatenate([lax.reshape(a, shape), lax.reshape(b, shape)], len(shape) - 1)


def threefry_2x32(keypair, count):
    """Hash a uint32 array `count` under a raw key: the flattened counts are split into two
    halves (padded with one zero when odd) that form the two counter words (JAX's
    `prng.threefry_2x32`)."""
    lax = _lax()
    k0, k1 = _key_words(keypair) if not isinstance(keypair, (tuple, list)) else keypair
    aval = get_aval(count)
    if not aval.dtype == get_aval(k0).dtype == get_aval(k1).dtype == np.uint32:
        raise TypeError("threefry_2x32 requires uint32 arguments, got "
                        f"{[str(get_aval(x).dtype) for x in (k0, k1, count)]}")
    n = aval.size
    flat = lax.reshape(count, (n,))
    if n % 2:
        flat = lax.concatenate([flat, lax.full((1,), _u32(0), np.uint32)], 0)
    half = (n + 1) // 2
    y0, y1 = threefry2x32(k0, k1, lax.slice(flat, (0,), (half,)),
                          lax.slice(flat, (half,), (2 * half,)))
    out = lax.concatenate([y0, y1], 0)
    if n % 2:
        out = lax.slice(out, (0,), (n,))
    return lax.reshape(out, aval.shape)


def partitionable() -> bool:
    """JAX's `jax_threefry_partitionable` flag (default True, as in JAX >= 0.5)."""
    # jit's cache does not key on it: set it before tracing.
    return bool(config._values["jax_threefry_partitionable"])


def threefry_split(key, shape):
    """Split a raw key into keys of `shape` (result uint32[*shape, 2]): key i (row-major) is
    threefry2x32(key, (0, i)) with 64-bit i (the partitionable split); with the flag off,
    JAX's original scheme hashes iota(2 n) through `threefry_2x32`."""
    lax = _lax()
    if not partitionable():
        n = math.prod(shape)
        return lax.reshape(threefry_2x32(key, lax.iota(np.uint32, 2 * n)), (*shape, 2))
    k0, k1 = _key_words(key)
    hi, lo = iota_2x32_shape(shape)
    y0, y1 = threefry2x32(k0, k1, hi, lo)
    return _stack_last(y0, y1)


def threefry_fold_in(key, data):
    """A new raw key from a key and a uint32 scalar: threefry2x32(key, (0, data))."""
    k0, k1 = _key_words(key)
    y0, y1 = threefry2x32(k0, k1, _lax().full((), _u32(0), np.uint32), data)
    return _stack_last(y0, y1)


def threefry_random_bits(key, bit_width: int, shape):
    """Uniform random bits of `shape` as uint{bit_width} (partitionable: element i comes from
    threefry2x32(key, (0, i)), whose two words are xor-ed for <= 32 bits or concatenated,
    high word first, for 64 bits)."""
    lax = _lax()
    if bit_width not in UINT_DTYPES:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    if not partitionable():
        return _random_bits_original(key, bit_width, tuple(shape))
    k0, k1 = _key_words(key)
    hi, lo = iota_2x32_shape(shape)
    y0, y1 = threefry2x32(k0, k1, hi, lo)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        y0 = lax.convert_element_type(y0, dtype)
        y1 = lax.convert_element_type(y1, dtype)
        return lax.bitwise_or(lax.shift_left(y0, np.array(32, dtype)), y1)
    bits = lax.bitwise_xor(y0, y1)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def _random_bits_original(key, bit_width, shape):
    """JAX's non-partitionable random bits: the hash of iota(ceil(bits * size / 32)),
    reinterpreted little-endian as the requested width."""
    lax = _lax()
    size = math.prod(shape)
    words = -(-bit_width * size // 32)
    if words >= 2 ** 32 - 1:
        raise NotImplementedError("random bits beyond 2**32 words need "
                                  "jax_threefry_partitionable=True in minijax")
    out = threefry_2x32(key, lax.iota(np.uint32, words))
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        hi = lax.convert_element_type(lax.slice(out, (0,), (words // 2,)), dtype)
        lo = lax.convert_element_type(lax.slice(out, (words // 2,), (words,)), dtype)
        out = lax.bitwise_or(lax.shift_left(hi, np.array(32, dtype)), lo)
    elif bit_width < 32:
        per_word = 32 // bit_width
        shifts = lax.mul(lax.broadcasted_iota(np.uint32, (words, per_word), 1),
                         np.uint32(bit_width))
        wide = lax.broadcast_in_dim(out, (words, per_word), (0,))
        parts = lax.bitwise_and(lax.shift_right_logical(wide, shifts),
                                np.uint32(2 ** bit_width - 1))
        out = lax.slice(lax.reshape(parts, (words * per_word,)), (0,), (size,))
        out = lax.convert_element_type(out, dtype)
    return lax.reshape(out, shape)


def is_threefry_key(x) -> bool:
    """Whether x has the shape and dtype of one raw threefry key."""
    try:
        aval = get_aval(x)
    except TypeError:
        return False
    return aval.shape == (2,) and aval.dtype == np.uint32


__all__ = ["ROTATIONS", "iota_2x32_shape", "is_threefry_key", "threefry2x32",
           "threefry2x32_p", "threefry2x32_reference", "threefry_2x32", "threefry_fold_in",
           "threefry_random_bits", "threefry_seed", "threefry_split"]
