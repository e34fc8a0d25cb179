"""Differential campaign: real XLA modules (JAX 0.10.2) run by minijax, compared with JAX.

    python tests/data/xla_modules/campaign.py gen DIR    # needs jax: writes DIR/NAME/...
    python tests/data/xla_modules/campaign.py run DIR [NAME...]   # minijax only
    python tests/data/xla_modules/campaign.py fixtures DIR   # copy FIXTURES here

`gen` lowers every program of programs.py and writes per program: args.npz (arg0..),
expected.npz (JAX's out0..), lowered.hlo (`lower().as_text(dialect="hlo")`), compiled.hlo
(`lower().compile().as_text()`) and the XLA dump files (`XLA_FLAGS=--xla_dump_to`):
dump_before.hlo, dump_after.hlo. `run` feeds every text to minijax's parser, verifier and
evaluator and to `minijax.tools.run_hlo` (cpu backend), compares with JAX's outputs and
prints one line per failure, with its stage, and a summary.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _gen(out_dir: str) -> None:
    dump = os.path.join(out_dir, "_xla_dump")
    if "--xla_dump_to" not in os.environ.get("XLA_FLAGS", ""):
        shutil.rmtree(dump, ignore_errors=True)
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text")
        sys.exit(subprocess.call([sys.executable, __file__, "gen", out_dir], env=env))
    import jax

    sys.path.insert(0, HERE)
    from programs import programs

    progs = programs(jax)
    for name, (f, args, x64) in progs.items():
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)

        def wrapped(*a, _f=f):
            return _f(*a)

        wrapped.__name__ = name
        try:
            with jax.enable_x64(x64):
                donate = (0,) if name == "donated" else ()
                jf = jax.jit(wrapped, keep_unused=True, donate_argnums=donate)
                lowered = jf.lower(*args)
                compiled = lowered.compile()
                outs = jax.tree_util.tree_leaves(jax.jit(wrapped, keep_unused=True)(*args))
                leaves = jax.tree_util.tree_leaves(args)
        except Exception as exc:  # noqa: BLE001 - the program itself is broken
            print(f"{name}: JAX failed: {exc}")
            continue
        save_arrays(os.path.join(d, "args.npz"), "arg", leaves)
        save_arrays(os.path.join(d, "expected.npz"), "out", outs)
        with open(os.path.join(d, "lowered.hlo"), "w") as fh:
            fh.write(lowered.as_text(dialect="hlo"))
        with open(os.path.join(d, "compiled.hlo"), "w") as fh:
            fh.write(compiled.as_text())
    for name in progs:
        for stage in ("before", "after"):
            hits = sorted(glob.glob(os.path.join(dump, f"*.jit_{name}.*{stage}_optimizations.txt")))
            if hits:
                shutil.copy(hits[-1], os.path.join(out_dir, name, f"dump_{stage}.hlo"))
    print(f"{len(progs)} programs written to {out_dir}")


def save_arrays(path: str, prefix: str, arrays) -> None:
    """PREFIX0.. in an .npz; bfloat16 (which .npz cannot hold) as float32, named in `dtypes`."""
    arrays = [np.asarray(a) for a in arrays]
    data = {f"{prefix}{i}": a.astype(np.float32) if a.dtype.kind == "V" or
            a.dtype.name == "bfloat16" else a for i, a in enumerate(arrays)}
    np.savez(path, dtypes=np.array([a.dtype.name for a in arrays]), **data)


def load_arrays(path: str, prefix: str) -> list[np.ndarray]:
    """The arrays save_arrays wrote, in their own dtypes."""
    import ml_dtypes

    data = np.load(path)
    names = [str(n) for n in data["dtypes"]]
    return [data[f"{prefix}{i}"].astype(getattr(ml_dtypes, n, None) or np.dtype(n))
            for i, n in enumerate(names)]


# Small modules that exposed bugs, checked in for tests/test_xla_modules.py: (program, kind).
FIXTURES = (("argsort", "compiled"), ("copy_transpose_out", "compiled"),
            ("transposes_3d", "compiled"), ("argmax_argmin", "compiled"),
            ("conv_grad", "compiled"), ("vmap_scan", "compiled"),
            ("rng_bit_generator", "dump_before"), ("rng_bit_generator_u8", "lowered"),
            ("top_k", "compiled"), ("cholesky", "compiled"), ("triangular_solve", "compiled"),
            ("lu", "compiled"), ("qr", "lowered"), ("fori_static", "compiled"))


def _fixtures(out_dir: str) -> None:
    for name, kind in FIXTURES:
        src = os.path.join(out_dir, name)
        shutil.copy(os.path.join(src, f"{kind}.hlo"), os.path.join(HERE, f"{name}.{kind}.hlo"))
        for what in ("args", "expected"):
            shutil.copy(os.path.join(src, f"{what}.npz"), os.path.join(HERE, f"{name}.{what}.npz"))
    print(f"{len(FIXTURES)} fixtures written to {HERE}")


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _tolerance(dtype) -> tuple[float, float]:
    if dtype == np.float64 or dtype == np.complex128:
        return 1e-9, 1e-12
    if dtype.itemsize <= 2 and dtype.kind == "f" or str(dtype) == "bfloat16":
        return 2e-2, 2e-2
    return 2e-4, 2e-5


def compare(got, want, what: str) -> str | None:
    """None when `got` matches JAX's `want`, else a one-line description."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"{what}: shape {got.shape} != JAX's {want.shape}"
    if str(got.dtype) != str(want.dtype):
        return f"{what}: dtype {got.dtype} != JAX's {want.dtype}"
    if want.dtype.kind in "fcV" or str(want.dtype) in ("bfloat16", "float16"):
        rtol, atol = _tolerance(want.dtype)
        g = got.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
        w = want.astype(g.dtype)
        bad = ~(np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True))
        if bad.any():
            i = np.argwhere(bad)[0]
            return (f"{what}: {int(bad.sum())}/{bad.size} differ, first at {tuple(i)}: "
                    f"{g[tuple(i)]} != {w[tuple(i)]}")
        return None
    if not np.array_equal(got, want):
        bad = got != want
        i = np.argwhere(bad)[0] if got.ndim else ()
        return (f"{what}: {int(np.sum(bad))}/{got.size} differ, first at {tuple(i)}: "
                f"{got[tuple(i)]} != {want[tuple(i)]}")
    return None


def run_one(path: str, args, expected, tmp: str, backends=("cpu",)) -> list[tuple[str, str]]:
    """(stage, message) for every failure of one module file."""
    from minijax.compiler.evaluator import evaluate_module
    from minijax.compiler.hlo.parser import parse_module
    from minijax.compiler.hlo.printer import module_to_text
    from minijax.compiler.hlo.verifier import verify_module
    from minijax.tools import run_hlo

    fails = []
    text = open(path).read()
    try:
        module = parse_module(text)
    except Exception as exc:  # noqa: BLE001
        return [("parse", f"{type(exc).__name__}: {exc}")]
    try:
        verify_module(module)
    except Exception as exc:  # noqa: BLE001
        fails.append(("verify", f"{type(exc).__name__}: {exc}"))
    try:
        printed = module_to_text(module)
        if module_to_text(parse_module(printed)) != printed:
            fails.append(("roundtrip", "print -> parse -> print differs"))
    except Exception as exc:  # noqa: BLE001
        fails.append(("roundtrip", f"{type(exc).__name__}: {exc}"))
    try:
        outs = evaluate_module(module, list(args))
        if len(outs) != len(expected):
            fails.append(("eval-value", f"{len(outs)} outputs, JAX has {len(expected)}"))
        else:
            for i, (g, w) in enumerate(zip(outs, expected)):
                msg = compare(g, w, f"out{i}")
                if msg:
                    fails.append(("eval-value", msg))
    except _Timeout:
        raise
    except Exception as exc:  # noqa: BLE001
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        fails.append(("eval", f"{type(exc).__name__}: {exc} [{os.path.basename(tb.filename)}:"
                              f"{tb.lineno}]"))
    np.savez(os.path.join(tmp, "args.npz"), **{f"arg{i}": a.astype(np.float32) if
                                               a.dtype.name == "bfloat16" else a
                                               for i, a in enumerate(args)})
    for backend in backends:
        out = os.path.join(tmp, "out.npz")
        if os.path.exists(out):
            os.remove(out)
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = run_hlo.run([path, "--args", os.path.join(tmp, "args.npz"), "--out",
                                      out, "--backend", backend])
            except _Timeout:
                raise
            except BaseException as exc:  # noqa: BLE001
                status = f"{type(exc).__name__}: {exc}"
        if status != 0:
            fails.append((f"run_hlo-{backend}", f"status {status}: {err.getvalue().strip()}"))
            continue
        got = np.load(out)
        if len(got.files) != len(expected):
            fails.append((f"run_hlo-{backend}-value", f"{len(got.files)} outputs"))
            continue
        for i, w in enumerate(expected):
            g = got[f"out{i}"]
            if w.dtype.name == "bfloat16" and g.dtype != w.dtype:
                g = g.view(w.dtype) if g.dtype.kind == "V" else g.astype(w.dtype)
            msg = compare(g, w, f"out{i}")
            if msg:
                fails.append((f"run_hlo-{backend}-value", msg))
    return fails


def _run(out_dir: str, names: list[str]) -> None:
    signal.signal(signal.SIGALRM, _alarm)
    names = names or sorted(n for n in os.listdir(out_dir)
                            if os.path.isdir(os.path.join(out_dir, n)) and n[0] != "_")
    tmp = tempfile.mkdtemp()
    n_mod, failures = 0, []
    for name in names:
        d = os.path.join(out_dir, name)
        args = load_arrays(os.path.join(d, "args.npz"), "arg")
        expected = load_arrays(os.path.join(d, "expected.npz"), "out")
        for kind in ("lowered", "compiled", "dump_before", "dump_after"):
            path = os.path.join(d, f"{kind}.hlo")
            if not os.path.exists(path):
                continue
            n_mod += 1
            signal.alarm(120)
            try:
                fails = run_one(path, args, expected, tmp)
            except _Timeout:
                fails = [("timeout", "over 120 s")]
            except Exception as exc:  # noqa: BLE001 - a campaign bug, reported as such
                fails = [("campaign", f"{type(exc).__name__}: {exc}")]
            finally:
                signal.alarm(0)
            for stage, msg in fails:
                failures.append((name, kind, stage, msg))
                print(f"FAIL {name}/{kind} [{stage}] {msg[:400]}", flush=True)
            if not fails:
                print(f"ok   {name}/{kind}", flush=True)
    print(f"\n{len(names)} programs, {n_mod} modules, {len(failures)} failures")
    by_stage: dict[str, int] = {}
    for f in failures:
        by_stage[f[2]] = by_stage.get(f[2], 0) + 1
    print(by_stage)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("gen", "run", "fixtures"):
        sys.exit(__doc__)
    if sys.argv[1] == "gen":
        _gen(sys.argv[2])
    elif sys.argv[1] == "fixtures":
        _fixtures(sys.argv[2])
    else:
        _run(sys.argv[2], sys.argv[3:])
