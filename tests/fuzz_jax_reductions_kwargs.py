"""Systematic differential campaign: minijax against real JAX on reductions, statistics and
cumulative functions with their keyword arguments.

Not collected by pytest (no test_ prefix): a tool. A grid of (function, keyword arguments)
runs over inputs of every dtype (bool, int8/uint8/int32/uint32, float16/bfloat16/float32,
complex64; with --x64 also int64/float64), of shapes (3, 4), (0, 4) and (2, 0, 3), floats
seeded with NaN and +-inf, eagerly and (for a sample, --jit-every) under jit. Each result is
compared with JAX's: exception type, shapes, dtypes, weak types and values (exact for
integers and booleans; a tolerance fitted to the dtype for floats, NaNs equal).

    PYTHONPATH=$PWD python tests/fuzz_jax_reductions_kwargs.py [--x64] [--jit-every 5]

prints one line per difference with a reproducer and a summary count.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jjnp
import jax.scipy.special as jsp
import ml_dtypes
import numpy as np

import minijax
import minijax.numpy as mjnp
import minijax.scipy.special as msp

jax.config.update("jax_platforms", "cpu")

BASE = ["bool", "int8", "uint8", "int32", "uint32", "float16", "bfloat16", "float32",
        "complex64"]
X64 = ["int64", "float64"]
SHAPES = [(3, 4), (0, 4), (2, 0, 3)]


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def make_input(dt, shape, seed):
    rng = np.random.default_rng(seed)
    d = np_dtype(dt)
    if dt == "bool":
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        lo = 0 if d.kind == "u" else -9
        return rng.integers(lo, 10, shape).astype(d)
    vals = rng.normal(size=shape) * 3
    if d.kind == "c":
        vals = vals + 1j * rng.normal(size=shape)
    x = vals.astype(d)
    if x.size >= 12 and seed % 2 == 0:
        flat = x.reshape(-1)
        if d.kind != "c":  # complex max/min with NaN depend on XLA's reduction order
            flat[1] = np.nan
        flat[6] = np.inf
        flat[9] = -np.inf
    return x


def mask_for(shape, seed):
    rng = np.random.default_rng(seed + 100)
    return rng.random(shape) < 0.6


# Each case: name, fn(xp, sp, x, extra) where xp is jnp, sp is scipy.special-like, and extra
# is a dict of host arrays derived from the input (masks, weights).
def _cases():
    cases = []

    def add(name, fn):
        cases.append((name, fn))

    for f in ("sum", "prod"):
        for kw in ({}, {"axis": 0}, {"axis": -1}, {"axis": (0, 1)}, {"axis": 1, "keepdims": True},
                   {"axis": None, "keepdims": True}, {"dtype": "float32"}, {"dtype": "int8"},
                   {"dtype": "bool"}, {"dtype": "complex64"}, {"dtype": "uint32"},
                   {"initial": 2}, {"initial": 2.5}, {"axis": 0, "initial": 1, "where": "m"},
                   {"promote_integers": False}, {"axis": 1, "where": "m"},
                   {"axis": -1, "dtype": "float16"}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("max", "min", "amax", "amin"):
        for kw in ({}, {"axis": 0}, {"axis": (0, -1)}, {"axis": 1, "keepdims": True},
                   {"initial": 0}, {"initial": 1.5}, {"axis": 1, "where": "m", "initial": -5},
                   {"where": "m"}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("all", "any"):
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"where": "m"},
                   {"axis": (0, 1), "where": "m", "keepdims": True}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("mean",):
        for kw in ({}, {"axis": 0}, {"axis": (0, -1), "keepdims": True}, {"dtype": "float16"},
                   {"dtype": "float32"}, {"dtype": "int32"}, {"dtype": "complex64"},
                   {"axis": 1, "where": "m"}, {"where": "m", "keepdims": True},
                   {"axis": 0, "where": "m", "dtype": "bfloat16"}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("var", "std"):
        for kw in ({}, {"axis": 0}, {"ddof": 1}, {"axis": 1, "correction": 1},
                   {"axis": -1, "keepdims": True, "ddof": 2}, {"dtype": "float16"},
                   {"dtype": "float32"}, {"dtype": "complex64"}, {"axis": 1, "where": "m"},
                   {"axis": 0, "where": "m", "ddof": 1, "keepdims": True},
                   {"ddof": 1, "correction": 1}, {"ddof": 1.5}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("argmax", "argmin", "nanargmax", "nanargmin"):
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"keepdims": True},
                   {"axis": (0,)}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for kw in ({}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}, {"axis": -1}):
        add(f"ptp{kw}", _reduce_case("ptp", kw))
        add(f"count_nonzero{kw}", _reduce_case("count_nonzero", kw))
    for kw in ({}, {"axis": 0}, {"axis": 1, "weights": "w1"}, {"axis": None, "weights": "wf"},
               {"axis": 0, "weights": "wf", "returned": True},
               {"axis": -1, "weights": "w1", "keepdims": True, "returned": True},
               {"returned": True}, {"axis": (0, 1), "keepdims": True, "returned": True},
               {"weights": "w1"}, {"axis": 0, "weights": "wi"}):
        add(f"average{kw}", _reduce_case("average", kw))
    for f in ("median", "nanmedian"):
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f, q in (("quantile", 0.3), ("nanquantile", 0.3), ("percentile", 30.0),
                 ("nanpercentile", 30.0)):
        qa = [0.0, 0.25, 1.0] if "quantile" in f else [0.0, 25.0, 100.0]
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"method": "lower"},
                   {"method": "higher"}, {"method": "nearest"}, {"method": "midpoint"},
                   {"method": "inverted_cdf"}, {"axis": 1, "qarr": True},
                   {"axis": 0, "qarr": True, "keepdims": True}, {"qint": True}):
            add(f"{f}{kw}", _quantile_case(f, q, qa, kw))
    for f in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"):
        kws = [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": 1, "where": "m"}]
        if f in ("nansum", "nanprod"):
            kws += [{"dtype": "float32"}, {"initial": 2}, {"dtype": "int32"}]
        if f in ("nanmax", "nanmin"):
            kws += [{"initial": 0.5}, {"axis": 0, "where": "m", "initial": 0}]
        if f in ("nanmean", "nanvar", "nanstd"):
            kws += [{"dtype": "float32"}, {"dtype": "float16"}]
        if f in ("nanvar", "nanstd"):
            kws += [{"ddof": 1}, {"axis": 0, "ddof": 1, "keepdims": True}]
        for kw in kws:
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
        for kw in ({}, {"axis": 0}, {"axis": -1}, {"dtype": "float32"}, {"dtype": "int8"},
                   {"dtype": "bool"}, {"axis": 1, "dtype": "float16"}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("cumulative_sum", "cumulative_prod"):
        for kw in ({"axis": 0}, {"axis": -1}, {"axis": 1, "include_initial": True},
                   {"axis": 0, "dtype": "float32", "include_initial": True},
                   {"axis": -1, "dtype": "int8"}, {}):
            add(f"{f}{kw}", _reduce_case(f, kw))
    for f in ("cummax", "cummin", "cumsum", "cumprod", "cumlogsumexp"):
        for kw in ({"axis": 0}, {"axis": 1, "reverse": True}):
            add(f"lax.{f}{kw}", _lax_cum_case(f, kw))
    for where in ("nn", "sp"):
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"b": "w"},
                   {"axis": 1, "b": "wneg", "return_sign": True}, {"return_sign": True},
                   {"axis": 1, "where": "m"}, {"axis": (0, 1), "keepdims": True}):
            add(f"{where}.logsumexp{kw}", _lse_case(where, kw))
    return cases


def _resolve(kw, x, xp):
    out = {}
    shape = np.shape(x)
    for k, v in kw.items():
        if v == "m":
            v = xp.asarray(mask_for(shape, 0))
        elif v == "w1":
            ax = kw.get("axis", -1)
            n = shape[ax] if shape else 1
            v = xp.asarray(np.linspace(0.5, 2.0, n).astype(np.float32))
        elif v == "wf":
            v = xp.asarray((np.arange(np.prod(shape)).reshape(shape) % 3).astype(np.float32))
        elif v == "wi":
            v = xp.asarray((np.arange(np.prod(shape)).reshape(shape) % 3).astype(np.int32))
        elif v == "w":
            v = xp.asarray(np.full(shape, 0.5, np.float32))
        elif v == "wneg":
            v = xp.asarray(np.where(np.arange(np.prod(shape)).reshape(shape) % 2, -2.0, 0.5)
                           .astype(np.float32))
        out[k] = v
    return out


def _reduce_case(f, kw):
    def run(xp, sp, lax_, x):
        return getattr(xp, f)(x, **_resolve(kw, x, xp))
    return run


def _quantile_case(f, q, qa, kw):
    kw = dict(kw)
    qarr = kw.pop("qarr", False)
    qint = kw.pop("qint", False)

    def run(xp, sp, lax_, x):
        qq = xp.asarray(np.array(qa, np.float32)) if qarr else (1 if qint else q)
        return getattr(xp, f)(x, qq, **_resolve(kw, x, xp))
    return run


def _lax_cum_case(f, kw):
    def run(xp, sp, lax_, x):
        return getattr(lax_, f)(x, **kw)
    return run


def _lse_case(where, kw):
    def run(xp, sp, lax_, x):
        fn = sp[0].logsumexp if where == "nn" else sp[1].logsumexp
        return fn(x, **_resolve(kw, x, xp))
    return run


def _tol(dt):
    name = np.dtype(dt).name
    return {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "complex64": 2e-6,
            "float64": 1e-13, "complex128": 1e-13}.get(name, 0)


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def compare(j_out, m_out):
    jl, ml = _leaves(j_out), _leaves(m_out)
    if len(jl) != len(ml):
        return f"#outputs {len(jl)} vs {len(ml)}"
    for i, (a, b) in enumerate(zip(jl, ml)):
        ja, ma = np.asarray(a), np.asarray(b)
        if ja.shape != ma.shape:
            return f"out{i} shape jax {ja.shape} minijax {ma.shape}"
        if ja.dtype != ma.dtype:
            return f"out{i} dtype jax {ja.dtype} minijax {ma.dtype}"
        jw = getattr(a, "weak_type", None)
        mw = getattr(b, "weak_type", None)
        if jw is not None and mw is not None and jw != mw:
            return f"out{i} weak_type jax {jw} minijax {mw}"
        tol = _tol(ja.dtype)
        if ja.dtype.kind in "fcV" or ja.dtype == np.dtype(ml_dtypes.bfloat16):
            jf, mf = ja.astype(np.complex128), ma.astype(np.complex128)
            jf = np.concatenate([jf.real.ravel(), jf.imag.ravel()])
            mf = np.concatenate([mf.real.ravel(), mf.imag.ravel()])
            jn, mn = np.isnan(jf), np.isnan(mf)
            if (jn != mn).any():
                return f"out{i} NaN pattern jax {ja.ravel()[:8]} minijax {ma.ravel()[:8]}"
            ok = ~jn
            fin = np.isfinite(jf) & ok
            if (jf[ok & ~fin] != mf[ok & ~fin]).any():
                return f"out{i} inf jax {ja.ravel()[:8]} minijax {ma.ravel()[:8]}"
            scale = np.maximum(np.abs(jf[fin]), 1.0)
            err = np.abs(jf[fin] - mf[fin]) / scale
            if err.size and err.max() > 4 * tol:
                return (f"out{i} values (err {err.max():.2e}) jax {ja.ravel()[:8]} "
                        f"minijax {ma.ravel()[:8]}")
        elif not np.array_equal(ja, ma):
            return f"out{i} values jax {ja.ravel()[:8]} minijax {ma.ravel()[:8]}"
    return None


def run_one(fn, x, mode, name):
    if x.size == 0 and name.startswith("mean") and "'int32'" in name:
        return None  # JAX 0.10.2 dies of SIGFPE (XLA folds 0 // 0)
    jx, mx = jjnp.asarray(x), mjnp.asarray(x)
    jmods = (jax.nn, jsp)
    mmods = (minijax.nn, msp)
    results = []
    for xp, sp, lax_, arg, jit in ((jjnp, jmods, jax.lax, jx, jax.jit),
                                   (mjnp, mmods, minijax.lax, mx, minijax.jit)):
        def call(a, xp=xp, sp=sp, lax_=lax_):
            return fn(xp, sp, lax_, a)
        try:
            out = jit(call)(arg) if mode == "jit" else call(arg)
            results.append(("ok", out))
        except Exception as e:  # noqa: BLE001 - comparing exception types is the point
            results.append(("err", e))
    (js, jo), (ms, mo) = results
    if js == "err" and ms == "err":
        if type(jo) is not type(mo) and not isinstance(mo, type(jo)):
            return f"error type jax {type(jo).__name__}: {str(jo)[:80]!r} minijax " \
                   f"{type(mo).__name__}: {str(mo)[:80]!r}"
        return None
    if js == "err":
        return f"jax raises {type(jo).__name__}: {str(jo)[:100]!r}, minijax returns"
    if ms == "err":
        return f"minijax raises {type(mo).__name__}: {str(mo)[:120]!r}"
    return compare(jo, mo)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--x64", action="store_true")
    p.add_argument("--jit-every", type=int, default=7)
    p.add_argument("--filter", default="")
    p.add_argument("--dtypes", default="")
    args = p.parse_args()
    if args.x64:
        jax.config.update("jax_enable_x64", True)
        minijax.config.update("jax_enable_x64", True)
    dts = args.dtypes.split(",") if args.dtypes else (X64 + BASE if args.x64 else BASE)
    cases = [c for c in _cases() if args.filter in c[0]]
    t0 = time.time()
    n = ndiff = 0
    for ci, (name, fn) in enumerate(cases):
        for di, dt in enumerate(dts):
            for si, shape in enumerate(SHAPES):
                x = make_input(dt, shape, ci + di + si)
                modes = ["eager"]
                if (ci + di + si) % args.jit_every == 0:
                    modes.append("jit")
                for mode in modes:
                    n += 1
                    d = run_one(fn, x, mode, name)
                    if d:
                        ndiff += 1
                        print(f"DIFF {name} {dt}{list(shape)} {mode}: {d}", flush=True)
    print(f"{n} comparisons, {ndiff} differences, {time.time() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
