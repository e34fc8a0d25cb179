"""The core of minijax.random: keys (raw and typed), split/fold_in, bits, and the samplers
that the others build on (uniform, normal, truncated_normal, bernoulli, rademacher,
randint). Part of minijax.random, which re-exports the public names here; the
distributions (minijax/random/distributions/) import this module at their top.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from minijax import dtypes, lax, tree_util
from minijax import numpy as jnp
from minijax.array_types import ArrayType
from minijax.core import get_aval
from minijax.lax import threefry
from minijax.random import xla_f32, xla_f64
from minijax.random.xla_f64 import emulated_fma as _fma

# --------------------------------------------------------------------------- keys


class KeyDType:
    """The dtype of typed threefry keys (prints as JAX's `key<fry>`)."""

    name = "key<fry>"
    impl = "threefry2x32"
    type = dtypes.prng_key

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType) or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class PRNGKeyArray:
    """An array of typed threefry keys backed by uint32 key data of shape (*shape, 2)."""

    __slots__ = ("_base",)
    dtype = KeyDType()

    def __init__(self, base):
        _check_key_data(base)
        self._base = base

    @property
    def shape(self) -> tuple:
        return tuple(get_aval(self._base).shape[:-1])

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)) and self.shape:
            n = self.shape[0]
            if not -n <= index < n:
                raise IndexError(f"index {index} is out of bounds for keys of shape "
                                 f"{self.shape}")
            return PRNGKeyArray(lax.index_in_dim(self._base, int(index) % n, 0, False))
        if not isinstance(index, tuple):
            index = (index,)
        if any(i is Ellipsis for i in index):
            index = index + (slice(None),)
        return PRNGKeyArray(self._base[index])

    def reshape(self, *shape):
        """Keys of a new shape (row-major, as arrays)."""
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], Sequence) \
            else shape
        return PRNGKeyArray(lax.reshape(self._base, (*_resolve(shape, self.size), 2)))

    def flatten(self):
        return self.reshape(-1)

    ravel = flatten

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return jnp.all(jnp.equal(self._base, other._base), axis=-1)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else jnp.logical_not(eq)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._base)}"


def _resolve(shape, size):
    shape = tuple(int(d) for d in shape)
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape = tuple(size // known if d == -1 else d for d in shape)
    return shape


tree_util.register_pytree_node(
    PRNGKeyArray, lambda k: ((k._base,), None),
    lambda _, children: _unchecked_keys(children[0]))


def _unchecked_keys(base) -> PRNGKeyArray:
    keys = object.__new__(PRNGKeyArray)
    keys._base = base
    return keys


def _check_key_data(data):
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("minijax encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {data!r}")
    if data.ndim < 1:
        raise TypeError("minijax encountered invalid PRNG key data: expected key_data.ndim "
                        f">= 1; got ndim={data.ndim}")
    if tuple(data.shape[-1:]) != (2,):
        raise TypeError("minijax encountered invalid PRNG key data: expected key_data.shape "
                        f"to end with (2,); got shape={tuple(data.shape)} for threefry2x32")
    if data.dtype != np.uint32:
        raise TypeError("minijax encountered invalid PRNG key data: expected key_data.dtype "
                        f"= uint32; got dtype={data.dtype}")


def _check_prng_key(name: str, key, allow_batched: bool = False):
    """(raw key data, whether `key` was typed); raw keys must be uint32[..., 2]."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._base, True
    else:
        if isinstance(key, (list, tuple, int, float)):
            raise TypeError(f"unexpected PRNG key type {type(key)}")
        if isinstance(key, np.ndarray) or np.isscalar(key):
            key = np.asarray(key)
        _check_key_data(key)
        data, typed = key, False
    if not allow_batched and get_aval(data).ndim > 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{get_aval(data).shape[:-1] if typed else get_aval(data).shape} "
                         "!= (). Use jax.vmap for batching.")
    return data, typed


def _return_keys(typed: bool, data):
    return _unchecked_keys(data) if typed else data


def _seed(ctor_name: str, seed):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not hasattr(seed, "shape") else len(seed.shape):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{tuple(np.shape(seed))} != (). Use jax.vmap for batching")
    if isinstance(seed, bool):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if isinstance(seed, int):
        # As JAX: a Python int goes through int64 (so 64-bit seeds work, and larger ones
        # raise OverflowError), then takes the default integer type (wrapping when x64 is off).
        seed = np.asarray(np.int64(seed)).astype(dtypes.default_int_dtype())
    elif isinstance(seed, (np.ndarray, np.generic, float, complex)):
        seed = np.asarray(seed)
        seed = seed.astype(dtypes.canonicalize_dtype(seed.dtype))
    return threefry.threefry_seed(seed)


def PRNGKey(seed, *, impl=None) -> object:  # noqa: N802 (JAX's name)
    """A raw (legacy) PRNG key, uint32[2], from an integer seed (64-bit seeds use both words;
    with x64 disabled Python ints wrap to 32 bits, as in JAX). `impl` may name the
    threefry2x32 implementation, minijax's only one."""
    _check_impl(impl)
    return _seed("PRNGKey", seed)


def key(seed, *, impl=None, dtype=None) -> PRNGKeyArray:
    """A typed PRNG key (a scalar `PRNGKeyArray`) from an integer seed; `impl` or its key
    `dtype` (not both) may name the threefry2x32 implementation."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "jax.random.key")
        impl = dtype
    _check_impl(impl)
    return _unchecked_keys(_seed("key", seed))


def _check_impl(impl):
    if impl not in (None, "threefry2x32", "threefry", KeyDType.name) and \
            not isinstance(impl, KeyDType):
        raise ValueError(f"unrecognized PRNG implementation {impl!r}; minijax has "
                         "'threefry2x32' only")


def key_dtype(impl_spec=None) -> KeyDType:
    """The dtype of typed keys of a PRNG implementation (minijax has threefry2x32 only)."""
    _check_impl(impl_spec)
    return PRNGKeyArray.dtype


def clone(key):
    """The same key, marked as safe to reuse. minijax does no key-reuse checking, so this
    is the identity (as JAX's clone outside jax.experimental.key_reuse)."""
    return key


def key_data(keys):
    """The uint32 data underlying keys: shape (*keys.shape, 2)."""
    data, _ = _check_prng_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> PRNGKeyArray:
    """Typed keys from uint32 key data of shape (..., 2)."""
    _check_impl(impl if dtype is None else dtype)
    if isinstance(key_bits_array, np.ndarray):
        key_bits_array = jnp.asarray(key_bits_array)
    return PRNGKeyArray(key_bits_array)


def key_impl(keys) -> str:
    """The name of the keys' PRNG implementation ('threefry2x32')."""
    _check_prng_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def _as_key(data):
    return data if not isinstance(data, np.ndarray) else jnp.asarray(data)


def split(key, num: int | tuple = 2):
    """`num` new keys (or keys of shape `num`) from one key, as a new leading axis."""
    data, typed = _check_prng_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (num,)
    shape = tuple(_static_int(d, "split") for d in shape)
    return _return_keys(typed, threefry.threefry_split(_as_key(data), shape))


def _static_int(d, name):
    try:
        return int(d)
    except Exception as e:  # a tracer
        raise TypeError(f"{name}: the number/shape of keys must be static; got {d!r}") from e


def fold_in(key, data):
    """A new key deterministically derived from `key` and a 32-bit integer `data`."""
    raw, typed = _check_prng_key("fold_in", key)
    if np.ndim(data) if not hasattr(data, "shape") else len(data.shape):
        raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                        f"{tuple(np.shape(data))} != (). Use jax.vmap for batching.")
    if isinstance(data, int) and not 0 <= data < 2 ** 32:
        raise OverflowError(f"Python integer {data} out of bounds for uint32")
    if isinstance(data, (int, np.integer, np.ndarray)):
        data = np.asarray(data).astype(np.uint32)
    else:
        data = lax.convert_element_type(data, np.uint32)
    return _return_keys(typed, threefry.threefry_fold_in(_as_key(raw), data))


def _random_bits(key_data_, bit_width, shape):
    return threefry.threefry_random_bits(_as_key(key_data_), bit_width, shape)


def _split(data, num=2):
    return threefry.threefry_split(_as_key(data), (num,))


def _key_at(keys, i):
    return lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,))


def _split_list(data, num=2):
    keys = _split(data, num)
    return [_key_at(keys, i) for i in range(num)]


# --------------------------------------------------------------------------- helpers


def _shape(shape) -> tuple:
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


def _float_dtype(dtype, name: str) -> np.dtype:
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if dtypes.kind(dt) != "f":
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def _check_shape(name: str, shape, *param_shapes):
    if param_shapes:
        try:
            merged = tuple(np.broadcast_shapes(tuple(shape), *param_shapes))
        except ValueError:
            merged = None
        if merged != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             "argument, and the result of broadcasting the shapes must equal "
                             f"the shape argument, but got result {merged} for shape argument "
                             f"{tuple(shape)}.")


def _sample_shape(name: str, shape, *param_shapes) -> tuple:
    """The shape to sample: the parameters' broadcast shape when ``shape`` is None, else
    ``shape`` checked to be what the parameters broadcast to (JAX's ValueError otherwise)."""
    if shape is None:
        return tuple(np.broadcast_shapes(*param_shapes))
    shape = _shape(shape)
    _check_shape(name, shape, *param_shapes)
    return shape


def _convert(x, dtype):
    return lax.convert_element_type(x, dtype)


def _bcast(x, shape):
    """x broadcast to `shape` by NumPy's rules (lax.broadcast_in_dim)."""
    xs, shape = tuple(get_aval(x).shape), tuple(shape)
    if xs == shape:
        return x
    if tuple(np.broadcast_shapes(xs, shape)) != shape:
        raise ValueError(f"Incompatible shapes for broadcasting: {xs} and requested shape "
                         f"{shape}")
    lead = len(shape) - len(xs)
    keep = [i for i, d in enumerate(xs) if d == shape[lead + i]]
    x = lax.reshape(x, tuple(xs[i] for i in keep))
    return lax.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def _const(value, dtype):
    return np.asarray(value, dtype)


# exp, log, log1p, erf_inv and multiply-add as JAX's CPU backend rounds them, so samples equal
# JAX's: float32 by xla_f32; bfloat16 and float16 as XLA computes them, in float32 rounded
# back after each operation; float64 by xla_f64 (its log is the C library's, NumPy's).
# Traced float64 log and erf are lax's, within a few ulp of the C library's.

_HALF = (np.dtype(dtypes.bfloat16), np.dtype(np.float16))


def _via(f32_fn, f64_fn, lax_fn):
    def fn(x):
        dt = get_aval(x).dtype
        if dt == np.float32:
            return f32_fn(x)
        if dt in _HALF:
            return _convert(f32_fn(_convert(x, np.float32)), dt)
        if dt == np.float64 and f64_fn is not None:
            return f64_fn(x)
        return lax_fn(x)
    return fn


_log = _via(xla_f32.log, None, lax.log)
_log1p = _via(xla_f32.log1p, xla_f64.log1p, lax.log1p)
_exp = _via(xla_f32.exp, xla_f64.exp, lax.exp)
_erf_inv = _via(xla_f32.erf_inv, xla_f64.erf_inv, lax.erf_inv)
_erf = _via(xla_f32.erf, xla_f64.erf, lax.erf)


def _mul_add(a, b, c):
    """a * b + c, one rounding for float32 where JAX's compiled code fuses the two."""
    return xla_f32.fma(a, b, c) if get_aval(a).dtype == np.float32 else \
        lax.add(lax.mul(a, b), c)


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers (uint32 by default, uint64 with x64)."""
    data, _ = _check_prng_key("bits", key)
    if dtype is None:
        dt = np.dtype(np.uint64) if dtypes.default_int_dtype() == np.int64 else \
            np.dtype(np.uint32)
    else:
        dt = dtypes.canonicalize_dtype(dtype)
    if dt.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _random_bits(data, dt.itemsize * 8, _shape(shape))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in [minval, maxval) (JAX's bit trick: 23 random mantissa bits)."""
    data, _ = _check_prng_key("uniform", key)
    # (0, 1) needs no fused multiply-add: floats * 1 + 0 is exact
    fused = not (_is_const(minval, 0.0) and _is_const(maxval, 1.0))
    return _uniform(data, _shape(shape), _float_dtype(dtype, "uniform"), minval, maxval,
                    fused=fused)


def _is_const(x, value=None) -> bool:
    """Whether x is a concrete scalar (equal to `value` when given)."""
    return isinstance(x, (int, float, np.number, np.ndarray)) and np.ndim(x) == 0 and \
        (value is None or float(x) == value)


def _uniform(data, shape, dtype, minval, maxval, *, fused: bool = False):
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = threefry.UINT_DTYPES[nbits]
    minval_in, maxval_in = minval, maxval
    minval = _bcast(_convert(minval, dtype), shape)
    maxval = _bcast(_convert(maxval, dtype), shape)
    # As JAX: formats with fewer than 8 mantissa bits (bfloat16) draw 8-bit words
    rng_bits = 8 if nmant < 8 else nbits
    raw = _random_bits(data, rng_bits, shape)
    if rng_bits != nbits:
        raw = _convert(raw, uint)
    float_bits = lax.bitwise_or(lax.shift_right_logical(raw, _const(rng_bits - nmant, uint)),
                                np.array(1.0, dtype).view(uint))
    floats = lax.bitcast_convert_type(float_bits, dtype)
    lo, hi = (np.asarray(v, dtype) if _is_const(v) else None for v in (minval_in, maxval_in))
    if not fused and lo is not None and hi is not None and hi - lo == 1:
        # XLA folds the constants of the compiled samplers (JAX passes Python floats):
        # (floats - 1) * 1 + minval becomes floats + (minval - 1), one rounding. It matters
        # for float16, whose tiny (gumbel's and logistic's minval) is large.
        return lax.max(minval, lax.add(floats, _const(lo - np.asarray(1, dtype), dtype)))
    floats = lax.sub(floats, _const(1.0, dtype))
    # JAX's compiled uniform contracts floats * (maxval - minval) + minval into one fused
    # multiply-add (one rounding); `fused` (public uniform) does the same for bit-equal
    # samples. The samplers built on it (normal, ...) round twice: they agree with JAX to
    # rounding anyway, and the emulation's extra work would slow them down.
    span = lax.sub(maxval, minval)
    if fused:
        scaled = _fma(floats, span, minval)
    else:
        scaled = lax.add(lax.mul(floats, span), minval)
    return lax.max(minval, scaled)


def normal(key, shape=(), dtype=None):
    """Standard normal samples: sqrt(2) * erfinv(u) for u uniform in (-1, 1)."""
    data, _ = _check_prng_key("normal", key)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if dtypes.kind(dt) not in "fc":
        raise ValueError("dtype argument to `normal` must be a float or complex dtype, "
                         f"got {dt}")
    shape = _shape(shape)
    if dt.kind == "c":
        real = dtypes.real_dtype(dt)
        k_re, k_im = _split_list(data)
        re = _convert(_normal_real(k_re, shape, real), dt)
        im = _convert(_normal_real(k_im, shape, real), dt)
        return lax.div(lax.add(re, lax.mul(im, _const(1j, dt))), _const(np.sqrt(2), dt))
    return _normal_real(data, shape, dt)


def _normal_real(data, shape, dtype):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(data, shape, dtype, lo, np.array(1.0, dtype))
    return lax.mul(_const(np.sqrt(2), dtype), _erf_inv(u))


def _nextafter(x, toward_positive: bool):
    """The next representable float after x toward +inf or -inf (nan stays nan)."""
    dtype = get_aval(x).dtype
    sint = np.dtype(f"int{dtype.itemsize * 8}")
    b = lax.bitcast_convert_type(x, sint)
    one = _const(1, sint)
    is_zero = lax.eq(x, _const(0, dtype))
    away_from_zero = lax.ge(b, _const(0, sint)) if toward_positive else \
        lax.lt(b, _const(0, sint))
    moved = lax.select(away_from_zero, lax.add(b, one), lax.sub(b, one))
    smallest = _const(1 if toward_positive else np.iinfo(sint).min + 1, sint)
    moved = lax.select(is_zero, lax.full_like(b, smallest), moved)
    out = lax.bitcast_convert_type(moved, dtype)
    return lax.select(lax.ne(x, x), x, out)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal samples truncated to the open interval (lower, upper)."""
    data, _ = _check_prng_key("truncated_normal", key)
    dt = _float_dtype(dtype, "truncated_normal")
    shape = _sample_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    sqrt2 = _const(np.sqrt(2), dt)
    lower, upper = _convert(lower, dt), _convert(upper, dt)
    # XLA turns the division by the constant sqrt(2) into a product with its reciprocal
    inv_sqrt2 = _const(np.asarray(1, dt) / sqrt2, dt)
    a = _erf(lax.mul(lower, inv_sqrt2))
    b = _erf(lax.mul(upper, inv_sqrt2))
    # JAX calls the public uniform: one rounding in floats * (b - a) + a
    u = _uniform(data, shape, dt, a, b, fused=True)
    out = lax.mul(sqrt2, _erf_inv(u))
    lo = _bcast(_nextafter(lax.stop_gradient(lower), True), shape)
    hi = _bcast(_nextafter(lax.stop_gradient(upper), False), shape)
    return lax.min(lax.max(out, lo), hi)


def bernoulli(key, p=0.5, shape=None, mode: str = "low"):
    """Boolean samples that are True with probability p."""
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    data, _ = _check_prng_key("bernoulli", key)
    dt = jnp.asarray(p).dtype
    if dtypes.kind(dt) != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    if shape is None:
        shape = tuple(np.shape(p))
    else:
        shape = _shape(shape)
        _check_shape("bernoulli", shape, np.shape(p))
    p = _bcast(_convert(p, dt), shape)
    if mode == "high":
        u = _uniform(data, (2, *shape), dt, 0.0, 1.0)
        u1 = lax.reshape(lax.slice_in_dim(u, 0, 1, axis=0), shape)
        u2 = lax.reshape(lax.slice_in_dim(u, 1, 2, axis=0), shape)
        u2 = lax.mul(u2, _const(2.0 ** -dtypes.finfo(dt).nmant, dt))
        return lax.lt(u2, lax.sub(p, u1))
    return lax.lt(_uniform(data, shape, dt, 0.0, 1.0), p)


def rademacher(key, shape=(), dtype=None):
    """Samples of -1 or +1 with equal probability."""
    data, _ = _check_prng_key("rademacher", key)
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    b = _convert(bernoulli(data, 0.5, _shape(shape)), dt)
    return lax.sub(lax.mul(_const(2, dt), b), _const(1, dt))


def _clip_to_int(val, dtype):
    """val (an integer array) clipped to dtype's range (within val's) and converted."""
    vinfo, info = np.iinfo(get_aval(val).dtype), np.iinfo(dtype)
    lo, hi = max(info.min, vinfo.min), min(info.max, vinfo.max)
    vdt = get_aval(val).dtype
    return _convert(jnp.clip(val, np.asarray(lo, vdt), np.asarray(hi, vdt)), dtype)


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in [minval, maxval) (JAX's two-word algorithm)."""
    data, _ = _check_prng_key("randint", key)
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = _shape(shape)
    info = np.iinfo(dt)
    sample_dt = dt
    if info.bits < 32:
        sample_dt = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype(np.int32), int(info.min),
                          int(info.max) + 1)
    return _convert(_randint(data, shape, minval, maxval, sample_dt), dt)


def _randint(data, shape, minval, maxval, dtype):
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    if minval.dtype.kind not in "iu":
        minval = minval.astype(dtypes.default_int_dtype())
    if maxval.dtype.kind not in "iu":
        maxval = maxval.astype(dtypes.default_int_dtype())
    top = min(np.iinfo(dtype).max, np.iinfo(maxval.dtype).max)
    maxval_out_of_range = _bcast(lax.gt(maxval, np.asarray(top, maxval.dtype)), shape)
    minval = _bcast(_clip_to_int(minval, dtype), shape)
    maxval = _bcast(_clip_to_int(maxval, dtype), shape)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _split_list(data)
    higher, lower = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    udt = threefry.UINT_DTYPES[nbits]
    span = _convert(lax.sub(maxval, minval), udt)
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, _const(1, udt)), span)
    multiplier = lax.rem(lax.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, _convert(offset, dtype))

# Typed key arrays are arrays to isinstance(x, jax.Array) / jnp.ndarray checks, as in JAX.
ArrayType.register(PRNGKeyArray)
