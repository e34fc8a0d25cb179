"""Unsigned integer sort keys for the evaluator's recognized sort comparators.

A recognized comparator key (one operand, its elementwise transform, a direction and a
comparison type) becomes an unsigned integer array whose ascending order is the comparator's
order and whose equal entries are exactly the comparator's ties. Integer keys let the sort
use NumPy's fast (non-stable, SIMD) np.sort:

- a stable permutation comes from sorting keys packed with the element index into one
  wider integer (`packed_permutation`): all packed values differ, so any sort is stable;
- a sorted operand comes from sorting the keys alone and decoding them back to values
  (`sorted_values`); the few tie groups whose members are not all the decoded value (the
  -0.0/+0.0 and NaN groups of jnp.sort's keys) are refilled with their members in input
  order, which is what a stable sort leaves there.
"""

from __future__ import annotations

import threading

import numpy as np

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class UnsignedKey:
    """`u`: unsigned keys (same shape as the operand; `owned`: ours, may be sorted in place);
    `decode(u)`: a fresh array of one value per key; `decode_into(u, out)` the same into an
    unsigned array `out` of u's shape and width (None where unsupported)."""

    def __init__(self, u: np.ndarray, decode, owned: bool, decode_into=None):
        self.u = u
        self.decode = decode
        self.decode_into = decode_into
        self.owned = owned
        self.bits = u.dtype.itemsize * 8


# A fresh large array costs a page fault per page on first touch (more than the sort of
# it on a virtual machine), so temporaries that never leave a sort live in per-thread
# scratch arrays reused across calls, and the conversions work in place.
_SCRATCH_MAX_BYTES = 1 << 23
_scratch = threading.local()


def scratch(slot: str, shape: tuple, dtype) -> np.ndarray:
    """An uninitialized array for a temporary that is dead once the sort returns."""
    arrays = getattr(_scratch, "arrays", None)
    if arrays is None:
        arrays = _scratch.arrays = {}
    hit = arrays.get(slot)
    if hit is not None and hit.shape == shape and hit.dtype == dtype:
        return hit
    out = np.empty(shape, dtype)
    if out.nbytes <= _SCRATCH_MAX_BYTES:
        arrays[slot] = out
    return out


def _float_order(x: np.ndarray, slot: str) -> np.ndarray:
    """Unsigned integers in XLA's TOTALORDER of the floats x (a bijection on bit patterns):
    the sign bit flips for positives, every bit for negatives."""
    size = x.dtype.itemsize
    signed = x.view(f"i{size}")
    out = np.right_shift(signed, size * 8 - 1, out=scratch(slot, x.shape, signed.dtype))
    out |= signed.dtype.type(-1 << (size * 8 - 1))
    out ^= signed
    return out.view(_UINT[size])


def _float_from_order(u: np.ndarray, dtype, out=None) -> np.ndarray:
    size = u.dtype.itemsize
    out = np.invert(u.view(f"i{size}"), out=out)
    out >>= size * 8 - 1  # -1 where the key's top bit is clear (a negative float)
    out |= out.dtype.type(-1 << (size * 8 - 1))
    out ^= u.view(f"i{size}")
    return out.view(dtype)


def unsigned_key(key: np.ndarray, descending: bool, ctype, slot: str) -> UnsignedKey | None:
    """The comparator's order of `key` as unsigned integers, or None for unsupported types.

    Floats compared with TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < +NaN. Other float
    comparisons order as the lexsort fallback does: -0 ties with +0 and NaNs (any sign)
    tie and go last in both directions. The keys of floats and signed integers live in the
    scratch array `slot`.
    """
    key = np.asarray(key)
    kind, size, dtype = key.dtype.kind, key.dtype.itemsize, key.dtype
    if kind == "V" and "float" in dtype.name:  # ml_dtypes: bfloat16, the 8-bit floats
        kind = "f"
    if kind not in "fiub" or size not in _UINT:
        return None
    width = _UINT[size]
    if kind == "f" and ctype != "TOTALORDER":
        flip = -key if descending else key
        canon = np.where(np.isnan(flip), np.array(np.nan, dtype), flip)
        canon = np.where(canon == 0, np.zeros((), dtype), canon)
        sign = -1 if descending else 1

        def decode_float(v):
            return (_float_from_order(v, dtype) * sign).astype(dtype)
        return UnsignedKey(_float_order(np.ascontiguousarray(canon, dtype), slot),
                           decode_float, True)
    top = width(1 << (size * 8 - 1))
    if kind == "f":
        u, owned = _float_order(key, slot), True
    elif kind == "i":
        u, owned = np.bitwise_xor(key.view(width), top, out=scratch(slot, key.shape, width)), True
    else:
        u, owned = key.view(width), False
    if descending:
        if owned:
            np.invert(u, out=u)
        else:
            u, owned = ~u, True

    def decode_into(v, out):
        if descending:
            v = np.invert(v, out=scratch("inverted", v.shape, v.dtype))
        if kind == "f":
            return _float_from_order(v, dtype, out=out.view(f"i{size}"))
        if kind == "i":
            return np.bitwise_xor(v, top, out=out).view(dtype)
        np.copyto(out, v)
        return out.view(dtype)

    def decode(v):
        return decode_into(v, np.empty(v.shape, width))
    return UnsignedKey(u, decode, owned, decode_into)


def pack_keys(ukeys: list[UnsignedKey], n: int, index_bits: int, wide) -> np.ndarray:
    """The keys (most significant first) above the element index in `index_bits` low bits,
    as `wide` integers: all distinct, ordered as a stable sort by the keys."""
    if (len(ukeys) == 1 and ukeys[0].bits == 32 and wide is np.uint64 and np.little_endian
            and ukeys[0].u.ndim == 2):
        # Two 32-bit halves written in place: cheaper than widening, shifting and or-ing.
        packed = scratch("packed", ukeys[0].u.shape, np.uint64)
        halves = packed.view(np.uint32).reshape(packed.shape + (2,))
        halves[..., 0] = np.arange(n, dtype=np.uint32)
        halves[..., 1] = ukeys[0].u
        return packed
    packed = np.arange(n, dtype=wide)
    shift = index_bits
    for k in reversed(ukeys):
        packed = packed | (k.u.astype(wide) << wide(shift))
        shift += k.bits
    return packed


def packed_permutation(ukeys: list[UnsignedKey], n: int):
    """(stable permutation, the sorted keys of a one-key sort) ordering rows of length n by
    the keys (most significant first), or None when keys and index exceed 64 bits. The
    permutation is an unsigned integer array (convert it before indexing with it)."""
    key_bits = sum(k.bits for k in ukeys)
    need = max(1, (n - 1).bit_length())
    if key_bits + need > 64:
        return None
    wide = np.uint32 if key_bits + need <= 32 else np.uint64
    index_bits = wide(0).itemsize * 8 - key_bits  # the spare low bits hold the index
    packed = pack_keys(ukeys, n, index_bits, wide)
    packed.sort(axis=-1)
    if index_bits == 32 and np.little_endian:  # the halves as strided views: no shifts
        halves = packed.view(np.uint32)
        perm, keys = halves[..., 0::2], halves[..., 1::2]
    else:
        perm = packed & wide((1 << index_bits) - 1)
        keys = packed >> wide(index_bits)
        keys = keys.astype(ukeys[0].u.dtype)
    return perm, (keys if len(ukeys) == 1 else None)


def take_rows(a: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """np.take_along_axis(a, perm, -1) for 2-D arrays, as one flat take (faster)."""
    rows, n = a.shape
    flat = (perm.astype(np.intp) + (np.arange(rows, dtype=np.intp) * n)[:, None]).reshape(-1)
    return np.ascontiguousarray(a).reshape(-1).take(flat).reshape(perm.shape)


def is_iota(a: np.ndarray) -> bool:
    """Whether every row of the 2-D integer array `a` is 0, 1, ..., n-1."""
    n = a.shape[-1]
    return a.dtype.kind in "iu" and n - 1 <= np.iinfo(a.dtype).max and bool(
        (a == np.arange(n, dtype=a.dtype)).all())


def _tie_groups(u: np.ndarray, touched: np.ndarray) -> np.ndarray:
    if touched.size <= 4:
        mask = u == touched[0]
        for t in touched[1:]:
            mask |= u == t
        return mask
    return np.isin(u, touched)


def reference_values(key: UnsignedKey) -> np.ndarray:
    """key.decode(key.u) in a scratch array (compared against, never returned)."""
    if key.decode_into is None:
        return key.decode(key.u)
    return key.decode_into(key.u, scratch("reference", key.u.shape, key.u.dtype))


def differing(op: np.ndarray, reference: np.ndarray, slot: str) -> np.ndarray:
    """Where `op` differs bit for bit from `reference` (the keys' decoded values)."""
    width = _UINT[op.dtype.itemsize]
    return np.not_equal(op.view(width), reference.view(width),
                        out=scratch(slot, op.shape, np.bool_))


def sorted_values(op: np.ndarray, key: UnsignedKey, sorted_u: np.ndarray,
                  differs: np.ndarray, keys_u: np.ndarray) -> np.ndarray:
    """`op` (2-D, rows along the last axis) stably sorted by its keys `keys_u`, given the
    sorted keys and where op differs from the decoded keys: the decoded sorted keys, with
    each tie group that holds a differing element refilled with its members in input order.
    """
    out = key.decode(sorted_u)
    if not differs.any():
        return out
    touched = np.unique(keys_u[differs])
    members = _tie_groups(keys_u, touched)
    targets = _tie_groups(sorted_u, touched)
    values = op[members]
    if touched.size > 1:
        rows = np.nonzero(members)[0]
        values = values[np.lexsort((keys_u[members], rows))]
    out[targets] = values
    return out
