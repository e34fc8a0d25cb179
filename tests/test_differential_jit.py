"""Differential testing of the CPU jit compiler on programs a JAX user writes.

Where tests/test_differential.py composes same-shape ops, this module draws the kernels the
compiler's newer paths produce: elementwise math over every float dtype at lengths around
the vector widths and interleaved loop bodies (1, 7, 8, 9, 17, 33, 1000+) with edge values;
broadcasting through size-1 dims; reductions over random axes (sum, max, min, mean, prod,
argmax, argmin) behind elementwise prologues; softmax / log_softmax rows (row fusion) with
few columns; dots next to reductions over the same value (the fusion pass's extra outputs);
gathers and scatters with negative and out-of-bounds indices; transposes, reshapes, slices,
concatenation, cumsum and sort; fori_loop, scan and cond; and jit(grad) of smooth programs.

Each program runs under `minijax.jit` and eagerly (op by op), and is checked against a
NumPy reference (float64 where it helps). JAX decides semantics where NumPy differs; those
answers are hard-coded below (checked against JAX 0.10.2). Tolerances are per op: a few
ulps for elementwise math, a relative bound for reductions (float32 accumulation order).

`HYPOTHESIS_PROFILE=differential` raises every test's example count for a local campaign.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax as mj
import minijax.numpy as jnp
from minijax import lax
from minijax import nn as mjnn
from minijax.test_util import enable_x64

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes ships with minijax's requirements
    BF16 = None

_CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci"


def _examples(n):
    """`n` examples in CI; the profile's count in a campaign."""
    return settings.default.max_examples if _CAMPAIGN else n


# Lengths around the vector widths (4, 8, 16 lanes) and the interleaved loop bodies.
LENGTHS = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 127, 1000, 1031, 4099]

_EDGES32 = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1.2e-38,
            3e38, -3e38, 88.7, -103.0, 1e-7, 20.0, -20.0, 9.0, 50.0]


def _inputs(rng, shape, dtype, edges=True, scale=2.0):
    """Normal values with ties and (optionally) edge values mixed in, cast to `dtype`."""
    x = rng.standard_normal(shape) * scale
    flat = x.reshape(-1)
    if flat.size:
        ties = rng.random(flat.size) < 0.1
        flat[ties] = flat[0]
        if edges:
            picks = rng.random(flat.size) < 0.25
            flat[picks] = rng.choice(_EDGES32, int(picks.sum()))
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(dtype)


def _ulp(ref, dtype):
    """The spacing of `dtype` at |ref| (ref in float64), floored at the smallest normal's."""
    finfo = np.finfo(dtype) if dtype != BF16 else ml_dtypes.finfo(dtype)
    mag = np.abs(ref)
    exponent = np.floor(np.log2(np.maximum(mag, float(finfo.tiny))))
    return np.exp2(exponent - finfo.nmant)


def _assert_ulps(got, ref, ulps, where, atol=0.0):
    """`got` (any float dtype) within `ulps` (plus the half ulp of rounding) of the float64
    reference `ref`, plus `atol`; NaN and inf positions equal."""
    dtype = np.asarray(got).dtype
    g = np.asarray(got).astype(np.float64)
    r = np.asarray(ref, np.float64)
    assert g.shape == r.shape, f"{where}: shape {g.shape} != {r.shape}"
    with np.errstate(over="ignore"):
        r_rounded = r.astype(dtype).astype(np.float64)
    nan = np.isnan(r)
    bad = np.isnan(g) != nan
    inf = np.isinf(r_rounded) & ~nan
    bad |= inf & (g != r_rounded)
    finite = ~(nan | inf)
    err = np.where(finite, np.abs(np.where(finite, g, 0) - np.where(finite, r, 0)), 0)
    with np.errstate(invalid="ignore"):
        bad |= finite & (err > (ulps + 0.5) * _ulp(r, dtype) + atol)
    if bad.any():
        k = np.flatnonzero(bad.reshape(-1))[:6]
        raise AssertionError(
            f"{where}: {bad.sum()} of {bad.size} wrong, e.g. at flat {k.tolist()}: got "
            f"{g.reshape(-1)[k].tolist()} want {r.reshape(-1)[k].tolist()}")


def _assert_same(got, want, where):
    """Same dtype, shape and values (bitwise, NaNs equal whatever their payloads)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    if want.dtype.kind == "f" or want.dtype == BF16:
        g, w = got.astype(np.float64), want.astype(np.float64)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
    else:
        same = got == want
    if not same.all():
        k = np.flatnonzero(~same.reshape(-1))[:6]
        raise AssertionError(f"{where}: {(~same).sum()} differ, e.g. at flat {k.tolist()}: "
                             f"got {got.reshape(-1)[k]} want {want.reshape(-1)[k]}")


def _assert_close(got, want, where, rtol, atol=0.0):
    """Close relative to each element (plus `atol`), NaN and inf positions equal."""
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
    nan = np.isnan(w)
    bad = np.isnan(g) != nan
    inf = np.isinf(w)
    bad |= inf & (g != w)
    fin = ~(nan | inf)
    with np.errstate(invalid="ignore"):
        bad |= fin & ~(np.abs(g - w) <= rtol * np.abs(w) + atol)
    if bad.any():
        k = np.flatnonzero(bad.reshape(-1))[:6]
        raise AssertionError(f"{where}: {bad.sum()} of {bad.size} off, e.g. at flat "
                             f"{k.tolist()}: got {g.reshape(-1)[k]} want {w.reshape(-1)[k]}")


def _eager(f, *args):
    return f(*[jnp.asarray(a) for a in args])


# --------------------------------------------------------------------------- elementwise math

def _rsqrt64(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(x)


def _sigmoid64(x):
    return scipy.special.expit(x)


# name: (minijax fn, float64 reference, ulps for float32, domain note)
UNARY = {
    "neg": (lambda x: -x, lambda x: -x, 0),
    "abs": (jnp.abs, np.abs, 0),
    "sign": (jnp.sign, np.sign, 0),
    "exp": (jnp.exp, np.exp, 2),
    "log": (jnp.log, np.log, 2),
    "log1p": (jnp.log1p, np.log1p, 2),
    "expm1": (jnp.expm1, np.expm1, 2),
    "tanh": (jnp.tanh, np.tanh, 3),
    "sigmoid": (mjnn.sigmoid, _sigmoid64, 3),
    "erf": (mj.scipy.special.erf, scipy.special.erf, 3),
    "sin": (jnp.sin, np.sin, 2),
    "cos": (jnp.cos, np.cos, 2),
    "sqrt": (jnp.sqrt, np.sqrt, 1),
    "rsqrt": (lax.rsqrt, _rsqrt64, 2),
    "square": (jnp.square, np.square, 1),
    "reciprocal": (jnp.reciprocal, np.reciprocal, 1),
    "floor": (jnp.floor, np.floor, 0),
    "round": (jnp.round, np.round, 0),
}

FLOAT_DTYPES = [np.dtype(np.float32), np.dtype(np.float16)] + ([BF16] if BF16 else [])


def _ulps_for(name, base, dtype):
    """float32 budgets carry over; half types round once more (their result is the float32
    computation rounded), so half an ulp of their own spacing on top."""
    return base if dtype == np.float32 else base * 2 ** -13 + 1


def _abs_floor(name, x64, dtype):
    """An absolute error allowed near a function's zeros where the argument's own rounding
    dominates (sin/cos near multiples of pi/2 of large arguments)."""
    if name in ("sin", "cos"):
        return 2 * np.finfo(np.float32).eps * np.maximum(1.0, np.abs(x64))
    return 0.0


@settings(max_examples=_examples(60))
@given(name=st.sampled_from(sorted(UNARY)), n=st.sampled_from(LENGTHS),
       dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**31 - 1),
       scale=st.sampled_from([1.0, 4.0, 30.0]), then_double=st.booleans())
def test_unary_math_ulps_against_float64(name, n, dtype, seed, scale, then_double):
    """One elementwise op (optionally fused with an exact doubling) at vector-width lengths,
    every float dtype, edge values included: jit within the op's ulps of float64, and eager
    the same."""
    fn, ref, ulps = UNARY[name]
    x = _inputs(np.random.default_rng(seed), (n,), dtype, scale=scale)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = ref(x64)
    if name in ("sin", "cos"):
        # Accuracy far from the origin is not promised (XLA reduces in float32 too).
        keep = np.abs(x64) < 1e4
        x = np.where(keep, x, np.array(0.5, dtype)).astype(dtype)
        x64 = x.astype(np.float64)
        want = ref(x64)
    f = (lambda v: fn(v) * 2) if then_double else fn
    if then_double:
        want = want * 2
    tol = _ulps_for(name, ulps, dtype)
    atol = _abs_floor(name, x64, dtype) * (2 if then_double else 1)
    got = mj.jit(f)(x)
    assert np.asarray(got).dtype == dtype
    _assert_ulps(got, want, tol, f"jit {name} {dtype} n={n}", atol=atol)
    # eager half-type ops may round their float32 steps to the type (one ulp more)
    eager_tol = tol if dtype == np.float32 else tol + 1
    _assert_ulps(_eager(f, x), want, eager_tol, f"eager {name} {dtype} n={n}", atol=atol)


BINARY = {
    "add": (lambda x, y: x + y, np.add, 0),
    "sub": (lambda x, y: x - y, np.subtract, 0),
    "mul": (lambda x, y: x * y, np.multiply, 0),
    "div": (lambda x, y: x / y, np.divide, 1),
    "maximum": (jnp.maximum, np.maximum, 0),
    "minimum": (jnp.minimum, np.minimum, 0),
    "pow": (jnp.power, np.power, 4),
    "where_gt": (lambda x, y: jnp.where(x > y, x, y), lambda x, y: np.where(x > y, x, y), 0),
    "where_le": (lambda x, y: jnp.where(x <= y, y - x, x),
                 lambda x, y: np.where(x <= y, y - x, x), 0),
}

_BROADCAST_PAIRS = [((7,), (7,)), ((1,), (9,)), ((3, 1), (1, 17)), ((2, 33), (1, 33)),
                    ((5, 1, 4), (1, 3, 1)), ((0, 3), (1, 3)), ((1, 1000), (4, 1)),
                    ((8,), ()), ((), (31,)), ((2, 1, 9), (2, 8, 1)), ((1031,), (1,))]


@settings(max_examples=_examples(60))
@given(name=st.sampled_from(sorted(BINARY)), shapes=st.sampled_from(_BROADCAST_PAIRS),
       dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**31 - 1),
       swap=st.booleans())
def test_binary_broadcast_against_float64(name, shapes, dtype, seed, swap):
    """Binary ops over broadcast shapes (size-1 and 0-size dims) with edge values."""
    fn, ref, ulps = BINARY[name]
    rng = np.random.default_rng(seed)
    sx, sy = shapes[::-1] if swap else shapes
    x, y = _inputs(rng, sx, dtype), _inputs(rng, sy, dtype)
    # (full copies: NumPy's stride-0 exponent 0.5 is sqrt, wrong at -inf and -0)
    x64, y64 = (np.array(a) for a in np.broadcast_arrays(x.astype(np.float64),
                                                        y.astype(np.float64)))
    with np.errstate(all="ignore"):
        want = ref(x64, y64)
    tol = _ulps_for(name, ulps, dtype)
    got = mj.jit(fn)(x, y)
    assert np.asarray(got).dtype == dtype and got.shape == want.shape
    _assert_ulps(got, want, tol, f"jit {name} {sx} {sy} {dtype}")
    if ulps == 0:
        _assert_same(got, _eager(fn, x, y), f"jit vs eager {name} {sx} {sy} {dtype}")


# --------------------------------------------------------------------------- reductions

# prologues: (minijax, float64 NumPy, exact in float32 for x in the inputs' range)
PROLOGUES = {
    "id": (lambda m, x: x, True),
    "neg_abs": (lambda m, x: -m.abs(x), True),
    "relu": (lambda m, x: m.maximum(x, 0.0), True),
    "square": (lambda m, x: x * x, False),
    "gauss": (lambda m, x: m.exp(-x * x), False),
    "tanh": (lambda m, x: m.tanh(x), False),
}

REDUCTIONS = ["sum", "mean", "max", "min", "prod", "argmax", "argmin"]

_RED_SHAPES = [(7,), (1000,), (4099,), (3, 5), (1, 17), (9, 1), (33, 8), (0, 4), (4, 0),
               (2, 3, 9), (5, 1, 7), (8, 1000), (2, 0, 3), (3, 2, 1031), (1, 1, 1)]


def _axes(draw, shape, single):
    rank = len(shape)
    if single:
        return draw(st.integers(-rank, rank - 1))
    return draw(st.one_of(st.none(), st.lists(st.integers(0, rank - 1), min_size=1,
                                              max_size=rank, unique=True).map(tuple)))


@st.composite
def reduction_cases(draw):
    shape = draw(st.sampled_from(_RED_SHAPES))
    red = draw(st.sampled_from(REDUCTIONS))
    axis = _axes(draw, shape, single=red in ("argmax", "argmin"))
    return (shape, red, axis, draw(st.sampled_from(sorted(PROLOGUES))), draw(st.booleans()),
            draw(st.sampled_from(["none", "sub", "scale"])))


def _reduce(m, red, x, axis, keepdims):
    fn = {"sum": m.sum, "mean": m.mean, "max": m.max, "min": m.min, "prod": m.prod,
          "argmax": m.argmax, "argmin": m.argmin}[red]
    return fn(x, axis=axis, keepdims=keepdims)


def _empty_reduction(shape, axis):
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
    return any(shape[a] == 0 for a in axes)


@settings(max_examples=_examples(60))
@given(case=reduction_cases(), seed=st.integers(0, 2**31 - 1), edges=st.booleans(),
       dtype=st.sampled_from([np.dtype(np.float32)] * 3 + FLOAT_DTYPES[1:]))
def test_reductions_behind_prologues(case, seed, edges, dtype):
    """prologue(x) -> reduction over random axes (keepdims or not) -> optional epilogue that
    broadcasts the result back against x (x - max(x), x * sum(x)): the reduction fusion with
    its producer and its consumers. Exact for max/min/arg*; relative for sums."""
    shape, red, axis, pro, keepdims, epi = case
    if red in ("max", "min", "argmax", "argmin") and _empty_reduction(shape, axis):
        return  # JAX raises for an empty max / argmax
    if red.startswith("arg") or not keepdims:
        epi = "none"
    pro_fn, pro_exact = PROLOGUES[pro]
    x = _inputs(np.random.default_rng(seed), shape, dtype, edges=edges,
                scale=0.5 if red == "prod" else 2.0)

    def f(m, v):
        p = pro_fn(m, v)
        r = _reduce(m, red, p, axis, keepdims)
        if epi == "sub":
            return p - r
        if epi == "scale":
            return p * r + 1.0
        return r

    got = mj.jit(lambda v: f(jnp, v))(x)
    eager = _eager(lambda v: f(jnp, v), x)
    where = f"{red} of {pro}(x) x{shape} {dtype} axis={axis} keepdims={keepdims} epi={epi}"
    with np.errstate(all="ignore"):
        p64 = pro_fn(np, x.astype(np.float64))
        if pro_exact or red.startswith("arg"):
            # the prologue's float32 value is what the reduction sees
            p64 = p64.astype(dtype).astype(np.float64) if pro_exact else p64
        want = f(np, x.astype(np.float64)) if not pro_exact else None
        if pro_exact:
            r = _reduce(np, red, p64, axis, keepdims)
            want = p64 - r if epi == "sub" else p64 * r + 1.0 if epi == "scale" else r
    assert got.shape == np.shape(want), f"{where}: shape {got.shape} != {np.shape(want)}"
    if red.startswith("arg"):
        assert np.asarray(got).dtype == np.int32, where
        _assert_same(got, eager, f"jit vs eager {where}")
        if pro_exact:  # (a rounded prologue may tie differently from float64)
            _assert_same(got, np.asarray(want).astype(np.int32), f"jit vs NumPy {where}")
        return
    assert np.asarray(got).dtype == dtype, where
    if red in ("max", "min") and pro_exact and epi == "none":
        _assert_same(got, want.astype(dtype), f"jit vs NumPy {where}")
        _assert_same(got, eager, f"jit vs eager {where}")
        return
    # float32 accumulation: n terms, each a few ulps off; relative to the sum of magnitudes
    n = max(1, int(np.prod(shape)) // max(1, int(np.prod(np.shape(_reduce(
        np, "sum", np.ones(shape), axis, True))))))
    eps = float(np.finfo(np.float32).eps) if dtype == np.float32 else 2.0 ** -8
    if red == "prod":
        rtol = (n + 8) * 4 * eps
        _assert_close(got, want, f"jit vs NumPy {where}", rtol=rtol, atol=1e-30)
        _assert_close(got, eager, f"jit vs eager {where}", rtol=rtol, atol=1e-30)
        return
    with np.errstate(all="ignore"):
        mag = _reduce(np, "sum" if red == "sum" else red if red != "mean" else "mean",
                      np.abs(p64), axis, keepdims)
        if red in ("max", "min"):
            mag = np.abs(mag)
        if epi == "sub":
            mag = np.abs(p64) + mag
        elif epi == "scale":
            mag = np.abs(p64) * mag + 1.0
    atol = np.where(np.isfinite(mag), mag, 0) * (8 * eps + 2 * np.sqrt(n) * eps) + 1e-30
    _assert_close(got, want, f"jit vs NumPy {where}", rtol=0.0, atol=atol)
    _assert_close(got, eager, f"jit vs eager {where}", rtol=0.0, atol=2 * atol)


# --------------------------------------------------------------------------- softmax rows

def _softmax64(x, log):
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=-1, keepdims=True)
        lse = np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
        return shifted - lse if log else np.exp(shifted - lse)


@settings(max_examples=_examples(50))
@given(rows=st.sampled_from([1, 2, 3, 8, 9, 17]),
       cols=st.sampled_from([1, 2, 3, 4, 5, 7, 8, 9, 10, 16, 17, 33, 1000]),
       kind=st.sampled_from(["softmax", "log_softmax", "manual", "manual_log", "logsumexp"]),
       seed=st.integers(0, 2**31 - 1), edges=st.booleans(),
       scale=st.sampled_from([1.0, 10.0, 100.0]), epi=st.booleans())
def test_softmax_rows(rows, cols, kind, seed, edges, scale, epi):
    """softmax / log_softmax / logsumexp over the last axis (row fusion) at few and many
    columns, with -inf, inf and NaN entries (JAX: NaN rows where max - max is NaN)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
    if edges:
        picks = rng.random(x.shape) < 0.2
        x[picks] = rng.choice([-np.inf, -np.inf, np.inf, np.nan, 80.0, -100.0],
                              int(picks.sum()))

    def f(v):
        if kind == "softmax":
            out = mjnn.softmax(v, axis=-1)
        elif kind == "log_softmax":
            out = mjnn.log_softmax(v, axis=-1)
        elif kind == "logsumexp":
            out = mj.scipy.special.logsumexp(v, axis=-1, keepdims=True)
        else:
            e = jnp.exp(v - jnp.max(v, axis=-1, keepdims=True))
            s = jnp.sum(e, axis=-1, keepdims=True)
            out = e / s if kind == "manual" else jnp.log(e) - jnp.log(s)
        return out * 2.0 - 1.0 if epi else out

    x64 = x.astype(np.float64)
    log = kind in ("log_softmax", "manual_log")
    if kind == "logsumexp":
        with np.errstate(all="ignore"):
            hi = np.max(x64, axis=-1, keepdims=True)
            finite_hi = np.where(np.isfinite(hi), hi, 0)
            want = np.log(np.sum(np.exp(x64 - finite_hi), -1, keepdims=True)) + finite_hi
    else:
        want = _softmax64(x64, log)
    if epi:
        want = want * 2.0 - 1.0
    if kind == "manual_log":
        # log(exp(v - max)) loses precision once exp(v - max) is subnormal in float32
        with np.errstate(all="ignore"):
            deep = (x64 - np.max(x64, axis=-1, keepdims=True)) < -80
        want = np.where(deep, np.asarray(_eager(f, x), np.float64), want)
    got = mj.jit(f)(x)
    where = f"{kind} {x.shape} epi={epi}"
    # exp/log a few ulps each, the sum cols terms; log-space outputs absolute
    eps = float(np.finfo(np.float32).eps)
    tol = (16 + 2 * np.sqrt(cols)) * eps
    mag = np.where(np.isfinite(want), np.abs(want), 0)
    atol = tol * (mag + (np.abs(np.where(np.isfinite(x64), x64, 0)).max(-1, keepdims=True)
                         if log or kind == "logsumexp" else 1.0)) * (2 if epi else 1)
    _assert_close(got, want, f"jit vs NumPy {where}", rtol=0.0, atol=atol)
    _assert_close(got, _eager(f, x), f"jit vs eager {where}", rtol=0.0, atol=2 * atol)
