"""`rng-bit-generator`: XLA's bit generators, bit for bit.

XLA expands `algorithm=rng_default` (on CPU and GPU) and `rng_philox` to Philox-4x32-10:
the key is state[0] (low word first), the 128-bit counter is (state[1], state[0]) for a
u64[2] state (low 64 bits first) or (state[1], state[2]) for a longer one, and each
counter value gives four u32 words. 32-bit outputs take the words in order; 8- and 16-bit
outputs take one word each, truncated; 64-bit outputs take two words each (low word first).
The new state advances the counter's low 64 bits by the number of Philox blocks used.
`rng_three_fry` is Threefry-2x32 (20 rounds) over the same layout: the key is state[0],
and each counter value state[1] + i gives two words.
"""

from __future__ import annotations

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_U32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _lo(x):
    return (x & _U32).astype(np.uint32)


def _hi(x):
    return (x >> _S32).astype(np.uint32)


def philox4x32(counter: list[np.ndarray], key: list[np.uint32]) -> list[np.ndarray]:
    """Philox-4x32-10 of four u32 counter words (arrays) under a two-word key."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint32) for c in counter)
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    with np.errstate(over="ignore"):
        for _ in range(10):
            p0 = c0.astype(np.uint64) * _M0
            p1 = c2.astype(np.uint64) * _M1
            c0, c1, c2, c3 = _hi(p1) ^ c1 ^ k0, _lo(p1), _hi(p0) ^ c3 ^ k1, _lo(p0)
            k0, k1 = k0 + _W0, k1 + _W1
    return [c0, c1, c2, c3]


_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(counter: list[np.ndarray], key: list[np.uint32]) -> list[np.ndarray]:
    """Threefry-2x32 with 20 rounds (Random123), as JAX and XLA define it."""
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    ks = [k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA)]
    x0 = np.asarray(counter[0], np.uint32) + ks[0]
    x1 = np.asarray(counter[1], np.uint32) + ks[1]
    with np.errstate(over="ignore"):
        for block in range(5):
            for r in _THREEFRY_ROTATIONS[block % 2]:
                x0 = x0 + x1
                x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
                x1 = x1 ^ x0
            x0 = x0 + ks[(block + 1) % 3]
            x1 = x1 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return [x0, x1]


def _threefry_bits(state: np.ndarray, dims: tuple[int, ...], per_element: int):
    """Threefry words for an array of `dims` (u32 words; `per_element` words each).

    A 64-bit element takes both words of one counter step, in row-major order. Otherwise XLA
    splits one dimension into (x0, x1) pairs: the one whose padding to an even length
    costs least (the first such on ties), padded by one when odd. The counter runs over the
    array with that dimension halved; the pair's two words sit next to each other along it.
    """
    key = [_lo(state[0]), _hi(state[0])]
    if per_element == 2:
        steps = int(np.prod(dims, dtype=np.int64))
        with np.errstate(over="ignore"):
            ctr = state[1] + np.arange(steps, dtype=np.uint64)
        return np.stack(threefry2x32([_lo(ctr), _hi(ctr)], key), axis=1).reshape(-1), steps
    if not dims:
        dims = (1,)
    size = int(np.prod(dims))
    if size == 0:
        return np.zeros(0, np.uint32), 0
    padded = [size // d * (d + d % 2) for d in dims]
    k = min(range(len(dims)), key=lambda i: (padded[i], i))
    half = tuple(d if i != k else (d + 1) // 2 for i, d in enumerate(dims))
    steps = int(np.prod(half))
    with np.errstate(over="ignore"):
        ctr = state[1] + np.arange(steps, dtype=np.uint64)
        x0, x1 = threefry2x32([_lo(ctr), _hi(ctr)], key)
    pairs = np.stack([x0.reshape(half), x1.reshape(half)], axis=k + 1)
    full = pairs.reshape(half[:k] + (2 * half[k],) + half[k + 1:])
    return full[tuple(slice(0, d) for d in dims)].reshape(-1), steps


def _words(algorithm: str, state: np.ndarray, dims, per_element: int):
    """The u32 words for an array of `dims` and the number of counter steps they used."""
    if algorithm == "rng_three_fry":
        return _threefry_bits(state, dims, per_element)
    n_words = int(np.prod(dims, dtype=np.int64)) * per_element
    key = [_lo(state[0]), _hi(state[0])]
    with np.errstate(over="ignore"):
        steps = -(-n_words // 4)
        high0 = state[2] if state.size >= 3 else state[0]
        low = state[1] + np.arange(steps, dtype=np.uint64)
        high = high0 + (low < state[1]).astype(np.uint64)   # carry into the high half
        words = philox4x32([_lo(low), _hi(low), _lo(high), _hi(high)], key)
    return np.stack(words, axis=1).reshape(-1)[:n_words], steps


def rng_bit_generator(instr, ops, ctx):
    """(new state, bits) of XLA's `rng-bit-generator` for the instruction's algorithm."""
    state = np.asarray(ops[0]).astype(np.uint64).reshape(-1)
    algorithm = instr.attrs.get("algorithm", "rng_default").lower()
    if algorithm not in ("rng_default", "rng_philox", "rng_three_fry"):
        raise ValueError(f"rng-bit-generator {instr.name}: unknown algorithm {algorithm}")
    if state.size < 2:
        raise ValueError(f"rng-bit-generator {instr.name}: the state has {state.size} "
                         "elements; XLA's generators need at least two u64 words")
    bits_shape = instr.shape.tuple_shapes[1]
    dtype, n = bits_shape.dtype, bits_shape.size
    per_element = 2 if dtype.itemsize == 8 else 1
    words, steps = _words(algorithm, state, bits_shape.dims, per_element)
    if per_element == 2:
        pairs = words.reshape(n, 2).astype(np.uint64)
        bits = pairs[:, 0] | (pairs[:, 1] << _S32)
    else:
        bits = words.astype(np.dtype(f"u{dtype.itemsize}"))
    bits = bits.view(dtype).reshape(bits_shape.dims)
    new_state = state.copy()
    with np.errstate(over="ignore"):
        new_state[1] += np.uint64(steps)
    out_state = new_state.astype(np.asarray(ops[0]).dtype).reshape(np.shape(ops[0]))
    return (out_state, bits)
