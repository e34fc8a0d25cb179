"""Replay an HLO text file on a backend.

    python -m minijax.tools.run_hlo FILE.hlo --args IN.npz --out OUT.npz [--backend NAME]
        [--repeat N] [--compare interpreter] [--no-opt] [--rtol R --atol A --fail-on-mismatch]

The module is parsed, optimized with minijax.compiler.pipeline.optimize (when the pipeline
exists), compiled by the backend and run on the arguments arg0, arg1, ... from IN.npz; the
outputs are written to OUT.npz as out0, out1, .... The median run time over --repeat runs is
printed. With --compare NAME the unoptimized module also runs on backend NAME (normally the
reference interpreter) and the largest absolute and relative difference per output is printed.
Exit status: 0 on success, 1 on a mismatch with --fail-on-mismatch, 2 on bad input.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from minijax.backends import get_backend
from minijax.compiler import driver, pipeline
from minijax.compiler.hlo.ir import NARROW_ELEMENT_TYPES
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.options import CompileOptions


class UsageError(Exception):
    """Bad input: the message is printed and the tool exits with status 2."""


def _parse(path: str):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return parse_module(text)
    except Exception as exc:  # noqa: BLE001 - reported as a usage error
        raise UsageError(f"{path}: cannot parse HLO: {exc}") from exc


def load_args(path: str | None, module) -> list[np.ndarray]:
    """Arguments arg0..argN-1 from an .npz file, checked against the entry parameters."""
    params = module.entry.parameters
    if path is None:
        if params:
            raise UsageError(f"the module takes {len(params)} arguments; pass --args IN.npz "
                             f"with arrays arg0..arg{len(params) - 1}")
        return []
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read arguments from {path}: {exc}") from exc
    names = set(data.files)
    expected = [f"arg{i}" for i in range(len(params))]
    missing = [n for n in expected if n not in names]
    if missing:
        raise UsageError(f"{path} lacks {', '.join(missing)} (the module takes "
                         f"{len(params)} arguments: "
                         f"{', '.join(str(p.shape) for p in params)})")
    extra = sorted(names - set(expected))
    if extra:
        raise UsageError(f"{path} has arrays the module does not take: {', '.join(extra)}")
    args = []
    for i, param in enumerate(params):
        arr = data[f"arg{i}"]
        shape = param.shape
        if arr.shape != shape.dims:
            raise UsageError(f"arg{i} has shape {arr.shape}, parameter {param.name} expects "
                             f"{shape}")
        if shape.element_type in NARROW_ELEMENT_TYPES:
            # .npz stores s4/f8/... arrays as raw bytes (void) or in a wider type.
            arr = (arr.view(shape.dtype) if arr.dtype.kind == "V" and arr.dtype.itemsize == 1
                   else arr.astype(shape.dtype))
        if arr.dtype != shape.dtype:
            if not np.can_cast(arr.dtype, shape.dtype, casting="same_kind"):
                raise UsageError(f"arg{i} has dtype {arr.dtype}, parameter {param.name} "
                                 f"expects {shape}")
            arr = arr.astype(shape.dtype)
        args.append(arr)
    return args


def _optimize(module, backend, enabled: bool):
    """The module after the backend's own pass pipeline; when disabled, only the passes that
    give XLA's text minijax's meaning (layouts, async pairs, XLA's fusions)."""
    options = CompileOptions(backend=backend.name)
    if not enabled:
        return pipeline.optimize(module, options, passes=pipeline.import_passes()), "off"
    return driver.optimize(module, backend, options), "on"


def _run(backend, executable, args: list) -> list[np.ndarray]:
    """Run on host arrays: copied to the backend's first device and the results back."""
    device = backend.devices()[0]
    bufs = [backend.buffer_from_host(np.array(a, order="C"), device) for a in args]
    return [np.asarray(backend.buffer_to_host(o)) for o in executable.execute(bufs)]


def _difference(got: np.ndarray, want: np.ndarray, rtol: float, atol: float):
    """(max abs diff, max rel diff, within tolerance); NaNs in the same places are equal."""
    if got.shape != want.shape:
        return float("inf"), float("inf"), False
    if got.size == 0:
        return 0.0, 0.0, True
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    w = want.astype(g.dtype)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    diff = np.where(same, 0.0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    rel = np.where(same, 0.0, diff / np.maximum(np.abs(w), np.finfo(np.float64).tiny))
    ok = bool(np.all(diff <= atol + rtol * np.abs(w)))
    return float(diff.max()), float(rel.max()), ok


def _storable(out: np.ndarray) -> np.ndarray:
    """Narrow outputs (s4, f8, ...) are written as int8/uint8/float32, which .npz keeps."""
    if out.dtype not in set(NARROW_ELEMENT_TYPES.values()):
        return out
    kind = next(k for k, v in NARROW_ELEMENT_TYPES.items() if v == out.dtype)[0]
    return out.astype({"f": np.float32, "s": np.int8, "u": np.uint8}[kind])


def run(argv: list[str] | None = None) -> int:
    """The command-line entry point; returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m minijax.tools.run_hlo",
                                description="Run an HLO text module on a minijax backend.")
    p.add_argument("file", help="HLO text file")
    p.add_argument("--args", help=".npz file with arrays arg0, arg1, ...")
    p.add_argument("--out", help=".npz file to write the outputs out0, out1, ... to")
    p.add_argument("--backend", default=None, help="interpreter, cpu or cuda (default: "
                   "MINIJAX_BACKEND or the best available)")
    p.add_argument("--repeat", type=int, default=1, help="runs to time (median is printed)")
    p.add_argument("--compare", metavar="BACKEND", help="also run the unoptimized module on "
                   "this backend (normally 'interpreter') and print the differences")
    p.add_argument("--no-opt", action="store_true", help="skip the optimization pipeline "
                   "(layouts, async pairs and XLA's fusions are still normalized)")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1e-6)
    p.add_argument("--fail-on-mismatch", action="store_true",
                   help="exit with status 1 when --compare finds a difference above tolerance")
    ns = p.parse_args(argv)
    if ns.repeat < 1:
        p.error("--repeat must be at least 1")

    try:
        module = _parse(ns.file)
        args = load_args(ns.args, module)
        backend = get_backend(ns.backend)
    except (UsageError, ValueError, RuntimeError) as exc:
        print(f"run_hlo: error: {exc}", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    try:
        optimized, opt_state = _optimize(module, backend, not ns.no_opt)
        executable = backend.compile(optimized, None)
    except Exception as exc:  # noqa: BLE001 - reported, not a traceback
        print(f"run_hlo: error: compiling on {backend.name} failed: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    compile_s = time.perf_counter() - t0
    times, outputs = [], []
    for _ in range(ns.repeat):
        t = time.perf_counter()
        try:
            outputs = _run(backend, executable, args)
        except Exception as exc:  # noqa: BLE001 - reported, not a traceback
            print(f"run_hlo: error: running on {backend.name} failed: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
        times.append(time.perf_counter() - t)
    print(f"module {module.name}: backend {backend.name}, optimization {opt_state}, "
          f"{executable.kernel_count} kernels, compile {compile_s * 1e3:.2f} ms")
    print(f"run time: median {statistics.median(times) * 1e3:.4f} ms over {ns.repeat} run(s)")
    for i, o in enumerate(outputs):
        print(f"  out{i}: {o.dtype}{list(o.shape)}")
    if ns.out:
        np.savez(ns.out, **{f"out{i}": _storable(o) for i, o in enumerate(outputs)})

    status = 0
    if ns.compare:
        try:
            reference_backend = get_backend(ns.compare)
        except (ValueError, RuntimeError) as exc:
            print(f"run_hlo: error: {exc}", file=sys.stderr)
            return 2
        reference = _run(reference_backend, reference_backend.compile(_parse(ns.file), None),
                         args)
        if len(reference) != len(outputs):
            print(f"compare: {len(outputs)} outputs vs {len(reference)} from {ns.compare}")
            return 1
        print(f"compare with {reference_backend.name}:")
        for i, (got, want) in enumerate(zip(outputs, reference)):
            want = np.asarray(want)
            abs_err, rel_err, ok = _difference(got, want, ns.rtol, ns.atol)
            print(f"  out{i}: max abs diff {abs_err:.3e}, max rel diff {rel_err:.3e}"
                  f"{'' if ok else '  MISMATCH'}")
            if not ok and ns.fail_on_mismatch:
                status = 1
    return status


def main() -> None:
    """Run as a script."""
    sys.exit(run())


if __name__ == "__main__":
    main()
