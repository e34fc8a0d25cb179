"""Randomized differential campaign: minijax against real JAX on element-wise edge values.

Not collected by pytest (no test_ prefix): a tool. Each program is one element-wise op (or a
short chain: convert then op) over arrays drawn from each dtype's edge values (NaN, +-inf,
+-0, subnormals, range limits, rounding halfway cases, INT_MIN, shift widths, ...). Every
program runs four ways: JAX eagerly and under jit, minijax eagerly and under jit (minijax's jit
compiles with its own LLVM CPU codegen), plus minijax under jit with the inputs closed over
(constant folding through the HLO evaluator). Results are compared bit for bit (any NaN equals
any NaN) for exact ops; transcendentals may differ by a few ulps but specials (NaN, inf,
zero with its sign) must agree.

    PYTHONPATH=$PWD python tests/fuzz_jax_edge_values.py --programs 2000 --seed 0

prints one line per mismatching (op, dtypes, mode) class with a reproducer and a summary.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import traceback

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np

import minijax
import minijax.numpy as mjnp

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
minijax.config.update("jax_enable_x64", True)

FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
          "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = ["bool"] + INTS + FLOATS + COMPLEX + FLOAT8


def np_dtype(name):
    if name in ("bfloat16",) or name.startswith("float8"):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def is_float(name):
    return name in FLOATS or name.startswith("float8")


_F_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, 2.0,
            np.nan, -np.nan, np.inf, -np.inf, 127.5, 128.0, -128.5, -129.0, 255.5, 256.0,
            -0.75, 32767.5, 32768.0, -32769.0, 65535.5, 65536.0, 2.0 ** 31, -2.0 ** 31,
            2.0 ** 31 - 1, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2.0 ** 64 - 2048,
            1e30, -1e30, 3.4e38, 1e300, 1e-30, 1e-40, -1e-40, 1e-310, 5e-324, 65504.0, 65520.0,
            1e-5, 6e-8, 3e-8, 2.0 ** 53 + 1, 4503599627370497.0, 8388609.0, 16777217.0,
            0.1, 1.0000001, 7.0, -7.0, 10.0, 0.3, 1e10, -1e10, 88.7, 89.0, -104.0, 710.0, 3.0]


def edge_values(name, rng, n):
    """n values of dtype `name`, drawn mostly from its edge values."""
    dt = np_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if name in INTS:
        info = np.iinfo(dt)
        bits = dt.itemsize * 8
        pool = [0, 1, -1, 2, -2, 3, -3, 7, -7, info.min, info.max, info.min + 1, info.max - 1,
                bits, bits - 1, bits + 1, -bits, 5, 6, 8, 12, 100, -100, info.max // 2,
                info.min // 2, 255, 256, 128, -128, 65535, 2 ** 31 - 1, -2 ** 31, 2 ** 24 + 1,
                2 ** 53 + 1, 2 ** 63 - 1, 2 ** 64 - 1, 2 ** 63, 2 ** 62 + 2 ** 40 + 1]
        pool = [v for v in pool if info.min <= v <= info.max]
        vals = [pool[i] for i in rng.integers(0, len(pool), n)]
        rand = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        mask = rng.random(n) < 0.25
        return np.where(mask, rand, np.array(vals, dtype=object).astype(dt)).astype(dt)
    if name in COMPLEX:
        fdt = "float32" if name == "complex64" else "float64"
        out = np.empty(n, dt)
        out.real, out.imag = edge_values(fdt, rng, n), edge_values(fdt, rng, n)
        return out
    with np.errstate(all="ignore"):
        pool = np.array(_F_EDGES, np.float64)
        vals = pool[rng.integers(0, len(pool), n)]
        rand = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        vals = np.where(rng.random(n) < 0.2, rand, vals)
        out = vals.astype(dt)
        # Bit patterns of the type itself (subnormals, max, min) for narrow floats.
        if dt.itemsize <= 2:
            ut = np.uint8 if dt.itemsize == 1 else np.uint16
            raw = rng.integers(0, 2 ** (8 * dt.itemsize), n).astype(ut).view(dt)
            special = np.array([1, 2, 0x7F, 0x80, 0x81, 0x3F, 0x40, 0x7E, 0xFE, 0xFF], ut)
            if dt.itemsize == 2:
                special = np.concatenate([special, np.array(
                    [0x3FF, 0x400, 0x7BFF, 0x7C00, 0x7F7F, 0x7F80, 0x8001, 0xFBFF, 0x0001,
                     0x00FF, 0x0080, 0x8080], ut)])
            picks = special[rng.integers(0, len(special), n)].view(dt)
            r = rng.random(n)
            out = np.where(r < 0.15, raw, np.where(r < 0.3, picks, out))
        return out.astype(dt)


class Op:
    def __init__(self, name, arity, fn, kinds, exact=True, ulps=0, params=None):
        self.name, self.arity, self.fn, self.kinds = name, arity, fn, kinds
        self.exact, self.ulps, self.params = exact, ulps, params or [{}]


def L(m, name):  # lax namespace
    return m.lax if hasattr(m, "lax") else m


I, U, F, C, B = "i", "u", "f", "c", "b"
NUM = (I, U, F, C)
REAL = (I, U, F)


def _lax(name):
    return lambda m, *a, **p: getattr(m.lax, name)(*a, **p)


def _np(name):
    return lambda m, *a, **p: getattr(m.numpy, name)(*a, **p)


UNARY = [
    Op("neg", 1, _lax("neg"), NUM), Op("abs", 1, _lax("abs"), NUM),
    Op("sign", 1, _lax("sign"), NUM), Op("floor", 1, _lax("floor"), (F,)),
    Op("ceil", 1, _lax("ceil"), (F,)),
    Op("lax_round", 1, _lax("round"), (F,), params=[{"rounding_method": 0},
                                                      {"rounding_method": 1}]),
    Op("is_finite", 1, _lax("is_finite"), (F,)),
    Op("clz", 1, _lax("clz"), (I, U)), Op("popcnt", 1, _lax("population_count"), (I, U)),
    Op("not", 1, _lax("bitwise_not"), (I, U, B)),
    Op("jnp_round", 1, _np("round"), (F, I, U),
       params=[{"decimals": 0}, {"decimals": 1}, {"decimals": 2}, {"decimals": -1}]),
    Op("rint", 1, _np("rint"), (F,)), Op("trunc", 1, _np("trunc"), (F, I, U)),
    Op("fix", 1, _np("fix"), (F,)),
    Op("signbit", 1, _np("signbit"), (F, I)), Op("isnan", 1, _np("isnan"), (F, C)),
    Op("isinf", 1, _np("isinf"), (F, C)),
    Op("sqrt", 1, _lax("sqrt"), (F,), exact=False, ulps=1),
    Op("rsqrt", 1, _lax("rsqrt"), (F,), exact=False, ulps=2),
    Op("cbrt", 1, _lax("cbrt"), (F,), exact=False, ulps=2),
    Op("exp", 1, _lax("exp"), (F,), exact=False, ulps=3),
    Op("exp2", 1, _lax("exp2"), (F,), exact=False, ulps=3),
    Op("log", 1, _lax("log"), (F,), exact=False, ulps=3),
    Op("expm1", 1, _lax("expm1"), (F,), exact=False, ulps=3),
    Op("log1p", 1, _lax("log1p"), (F,), exact=False, ulps=3),
    Op("tanh", 1, _lax("tanh"), (F,), exact=False, ulps=4),
    Op("logistic", 1, _lax("logistic"), (F,), exact=False, ulps=4),
    Op("reciprocal", 1, _np("reciprocal"), (F,)),
    Op("square", 1, _np("square"), (F, I, U)),
    Op("red_prec", 1, _lax("reduce_precision"), (F,),
       params=[{"exponent_bits": 5, "mantissa_bits": 10}, {"exponent_bits": 8,
                                                            "mantissa_bits": 7},
               {"exponent_bits": 4, "mantissa_bits": 3}, {"exponent_bits": 5,
                                                          "mantissa_bits": 2},
               {"exponent_bits": 11, "mantissa_bits": 52}, {"exponent_bits": 8,
                                                            "mantissa_bits": 23},
               {"exponent_bits": 3, "mantissa_bits": 1}]),
]

BINARY = [
    Op("add", 2, _lax("add"), NUM + (B,)), Op("sub", 2, _lax("sub"), NUM),
    Op("mul", 2, _lax("mul"), NUM + (B,)),
    Op("div", 2, _lax("div"), NUM), Op("rem", 2, _lax("rem"), REAL),
    Op("max", 2, _lax("max"), REAL + (B,)), Op("min", 2, _lax("min"), REAL + (B,)),
    Op("pow_lax", 2, _lax("pow"), (F,), exact=False, ulps=4),
    Op("nextafter", 2, _lax("nextafter"), (F,)),
    Op("atan2", 2, _lax("atan2"), (F,), exact=False, ulps=3),
    Op("shl", 2, _lax("shift_left"), (I, U)),
    Op("shrl", 2, _lax("shift_right_logical"), (I, U)),
    Op("shra", 2, _lax("shift_right_arithmetic"), (I, U)),
    Op("and", 2, _lax("bitwise_and"), (I, U, B)), Op("xor", 2, _lax("bitwise_xor"), (I, U, B)),
    Op("eq", 2, _lax("eq"), NUM), Op("ne", 2, _lax("ne"), NUM),
    Op("lt", 2, _lax("lt"), REAL), Op("ge", 2, _lax("ge"), REAL),
    Op("floor_divide", 2, _np("floor_divide"), REAL),
    Op("remainder", 2, _np("remainder"), REAL), Op("fmod", 2, _np("fmod"), REAL),
    Op("power_int", 2, _np("power"), (I, U)),
    Op("power_f", 2, _np("power"), (F,), exact=False, ulps=4),
    Op("left_shift", 2, _np("left_shift"), (I, U)),
    Op("right_shift", 2, _np("right_shift"), (I, U)),
    Op("fmax", 2, _np("fmax"), (F,)), Op("fmin", 2, _np("fmin"), (F,)),
    Op("maximum", 2, _np("maximum"), (F, I, U)), Op("minimum", 2, _np("minimum"), (F, I, U)),
    Op("copysign", 2, _np("copysign"), (F,)),
    Op("logaddexp", 2, _np("logaddexp"), (F,), exact=False, ulps=4),
    Op("gcd", 2, _np("gcd"), (I, U)), Op("lcm", 2, _np("lcm"), (I, U)),
    Op("heaviside", 2, _np("heaviside"), (F,)),
    Op("divmod_q", 2, lambda m, a, b: m.numpy.divmod(a, b)[0], REAL),
    Op("divmod_r", 2, lambda m, a, b: m.numpy.divmod(a, b)[1], REAL),
]


def kind_of(name):
    if name == "bool":
        return B
    if name in INTS:
        return I if name.startswith("int") else U
    if name in COMPLEX:
        return C
    return F


class Mod:
    """The JAX-like module pieces a program uses."""
    def __init__(self, mod, np_mod):
        self.lax = mod.lax
        self.numpy = np_mod
        self.jit = mod.jit
        self.mod = mod


JAX = Mod(jax, jjnp)
MJ = Mod(minijax, mjnp)


def dtype_in(m, name):
    return getattr(m.numpy, name)


def make_program(rng):
    """(description, fn(m, *args), list of numpy input arrays, exact, ulps)."""
    r = rng.random()
    n = int(rng.integers(8, 40))
    if r < 0.3:  # convert_element_type between any pair of dtypes
        src = ALL[rng.integers(len(ALL))]
        dst = ALL[rng.integers(len(ALL))]
        x = edge_values(src, rng, n)
        how = ["lax", "astype"][rng.integers(2)]

        def fn(m, a):
            if how == "lax":
                return m.lax.convert_element_type(a, dtype_in(m, dst))
            return a.astype(dtype_in(m, dst))
        return f"convert[{how}] {src}->{dst}", fn, [x], True, 0
    if r < 0.37:  # bitcast between widths
        src = ALL[rng.integers(1, len(ALL))]
        cands = [d for d in ALL[1:] if np_dtype(d).itemsize in
                 (np_dtype(src).itemsize, np_dtype(src).itemsize * 2,
                  np_dtype(src).itemsize // 2, np_dtype(src).itemsize * 4)]
        dst = cands[rng.integers(len(cands))]
        ratio = np_dtype(dst).itemsize / np_dtype(src).itemsize
        shape = (n,) if ratio <= 1 else (n, int(ratio))
        x = edge_values(src, rng, int(np.prod(shape))).reshape(shape)
        return (f"bitcast {src}->{dst}",
                lambda m, a: m.lax.bitcast_convert_type(a, dtype_in(m, dst)), [x], True, 0)
    if r < 0.45:  # convert then op (fusion of a convert into an arithmetic kernel)
        src = ALL[rng.integers(len(ALL))]
        dst = (FLOATS + INTS)[rng.integers(len(FLOATS) + len(INTS))]
        op = [o for o in UNARY + BINARY if kind_of(dst) in o.kinds and o.exact]
        op = op[rng.integers(len(op))]
        params = op.params[rng.integers(len(op.params))]
        xs = [edge_values(src, rng, n) for _ in range(op.arity)]

        def fn(m, *a):
            return op.fn(m, *[m.lax.convert_element_type(v, dtype_in(m, dst)) for v in a],
                         **params)
        return f"convert {src}->{dst} then {op.name}{params or ''}", fn, xs, True, 0
    ops = UNARY + BINARY
    op = ops[rng.integers(len(ops))]
    dts = [d for d in ALL if kind_of(d) in op.kinds]
    if not op.exact:
        dts = [d for d in dts if not d.startswith("float8")]
    dt = dts[rng.integers(len(dts))]
    params = op.params[rng.integers(len(op.params))]
    xs = [edge_values(dt, rng, n) for _ in range(op.arity)]
    if op.name in ("shl", "shrl", "shra", "left_shift", "right_shift", "power_int") and \
            rng.random() < 0.5:
        info = np.iinfo(np_dtype(dt))
        lo = max(int(info.min), -70)
        xs[1] = rng.integers(lo, 70, n).astype(np_dtype(dt))
    if op.name in ("gcd", "lcm") and kind_of(dt) == I:
        # JAX's gcd loops forever on INT_MIN (|INT_MIN| wraps): no answer to compare with.
        xs = [np.where(x == np.iinfo(x.dtype).min, 0, x).astype(x.dtype) for x in xs]
    return f"{op.name}{params or ''} {dt}", (lambda m, *a: op.fn(m, *a, **params)), xs, \
        op.exact, op.ulps


def to_numpy(x):
    return np.asarray(x)


def ulp_distance(a, b):
    """|a - b| in units of the last place, for float arrays of one dtype (both finite)."""
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    spacing = np.abs(np.spacing(np.maximum(np.abs(a64), np.abs(b64)).astype(a.dtype)
                                .astype(a.dtype))).astype(np.float64)
    spacing = np.where(spacing == 0, np.finfo(np.float64).tiny, spacing)
    return np.abs(a64 - b64) / spacing


def compare(got, want, exact, ulps, ignore=None):
    """None when equal, else a short description of the first differing elements (those
    where the mask `ignore` is set do not count)."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype.kind == "c":
        parts = [compare(got.real, want.real, exact, ulps, ignore),
                 compare(got.imag, want.imag, exact, ulps, ignore)]
        bad = [p for p in parts if p]
        return "; ".join(bad) if bad else None
    if got.dtype.kind in "biu":
        bad = got != want
    else:
        g = np.asarray(got, dtype=got.dtype).astype(np.float64)
        w = np.asarray(want, dtype=want.dtype).astype(np.float64)
        gn, wn = np.isnan(g), np.isnan(w)
        same_bits = (got.view(np.dtype(f"u{got.dtype.itemsize}")) ==
                     want.view(np.dtype(f"u{want.dtype.itemsize}")))
        bad = ~(same_bits | (gn & wn))
        if not exact:
            special = gn | wn | np.isinf(g) | np.isinf(w) | (g == 0) | (w == 0)
            with np.errstate(all="ignore"):
                close = ulp_distance(got.astype(got.dtype), want) <= ulps
            bad = bad & (special | ~close)
    if ignore is not None:
        bad = bad & ~ignore
    if not bad.any():
        return None
    idx = np.flatnonzero(bad.ravel())[:4]
    return ", ".join(f"[{i}] got {got.ravel()[i]!r} want {want.ravel()[i]!r}" for i in idx)


_FTZ_TINY = {"float32": np.finfo(np.float32).tiny, "bfloat16": np.finfo(np.float32).tiny,
             "complex64": np.finfo(np.float32).tiny, "float64": np.finfo(np.float64).tiny,
             "complex128": np.finfo(np.float64).tiny}


def flush_denormals(x):
    """x with float32/bfloat16/float64 subnormals replaced by zeros of their sign, as XLA:CPU
    does to every operand and result of float arithmetic (DAZ/FTZ)."""
    tiny = _FTZ_TINY.get(x.dtype.name)
    if tiny is None:
        return x
    if x.dtype.kind == "c":
        return flush_denormals(x.real.copy()) + 1j * flush_denormals(x.imag.copy())
    x64 = x.astype(np.float64)
    sub = (x64 != 0) & (np.abs(x64) < tiny)
    return np.where(sub, (np.copysign(0.0, x64)).astype(x.dtype), x).astype(x.dtype)


def subnormal_mask(xs, out):
    """Elements where an input or the result is a float32/bfloat16/float64 subnormal: XLA:CPU
    computes with denormals off there, its transcendentals giving anything from 0 to values
    of the operands read as zero (pow, cbrt); not comparable."""
    mask = np.zeros(out.shape, bool)
    for x in list(xs) + [out]:
        tiny = _FTZ_TINY.get(x.dtype.name)
        if x.shape == out.shape and tiny is not None:
            for part in ((x.real, x.imag) if x.dtype.kind == "c" else (x,)):
                v = np.abs(part.astype(np.float64))
                mask |= (v != 0) & (v < tiny)
    return mask


def run(m, fn, xs, mode):
    if mode == "eager":
        return to_numpy(fn(m, *[m.numpy.asarray(x) for x in xs]))
    if mode == "jit":
        return to_numpy(m.jit(lambda *a: fn(m, *a))(*xs))
    if mode == "const":
        return to_numpy(m.jit(lambda: fn(m, *[m.numpy.asarray(x) for x in xs]))())
    raise ValueError(mode)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--filter", default="")
    ap.add_argument("--modes", default="eager,jit,const")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    modes = args.modes.split(",")
    classes = collections.OrderedDict()
    counts = collections.Counter()
    t0 = time.time()
    for _ in range(args.programs):
        desc, fn, xs, exact, ulps = make_program(rng)
        if args.filter and args.filter not in desc:
            continue
        counts["programs"] += 1
        tp = time.time()
        if args.verbose:
            print(f"> {desc}", flush=True)
        try:
            want_e = run(JAX, fn, xs, "eager")
            want_j = run(JAX, fn, xs, "jit")
        except Exception:  # JAX rejects it: minijax may too
            counts["jax_rejects"] += 1
            continue
        if compare(want_e, want_j, exact, ulps) is not None:
            counts["jax_eager_vs_jit_differ"] += 1
        for mode in modes:
            want = want_e if mode == "eager" else want_j
            try:
                got = run(MJ, fn, xs, mode)
            except Exception as e:  # noqa: BLE001 - a tool reporting everything
                msg = f"raised {type(e).__name__}: {str(e).splitlines()[0][:150]}"
                if args.verbose:
                    traceback.print_exc()
            else:
                msg = compare(got, want, exact, ulps)
                if msg is not None and mode != "eager":
                    # JAX's own eager answer is acceptable where its jit differs.
                    if compare(got, want_e, exact, ulps) is None:
                        msg = None
            counts["runs"] += 1
            if msg is not None and not msg.startswith("raised"):
                try:  # explained by XLA:CPU flushing denormals to zero?
                    got_ftz = flush_denormals(run(MJ, fn, [flush_denormals(x) for x in xs],
                                                  mode))
                except Exception:  # noqa: BLE001
                    got_ftz = None
                if got_ftz is not None and compare(got_ftz, want, exact, ulps) is None:
                    counts["ftz_only"] += 1
                    msg = None
                elif compare(got, want, exact, ulps, subnormal_mask(xs, got)) is None:
                    counts["subnormal_operands"] += 1
                    msg = None
            if msg is None:
                continue
            counts["mismatches"] += 1
            key = (desc, mode)
            if key not in classes:
                classes[key] = (msg, [x.tolist() for x in xs])
                print(f"MISMATCH {mode:5s} {desc}: {msg}", flush=True)
                if args.verbose:
                    print("  inputs:", [x.dtype.name for x in xs], str(xs)[:600])
        if args.verbose:
            print(f"  {time.time() - tp:.2f}s {desc}", flush=True)
    print(f"# {counts['programs']} programs, {counts['runs']} minijax runs, "
          f"{counts['mismatches']} mismatching runs in {len(classes)} classes, "
          f"{counts['ftz_only']} runs differing only by denormal flushing, "
          f"{counts['subnormal_operands']} more only where an operand is subnormal, "
          f"{counts['jax_rejects']} rejected by JAX, {counts['jax_eager_vs_jit_differ']} where "
          f"JAX eager and jit differ; {time.time() - t0:.0f}s", flush=True)
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main())
