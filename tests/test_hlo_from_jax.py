"""HLO text printed by real JAX: parse, verify, round-trip, and run with minijax.

Two sources of text:
- fixtures in tests/data/jax_hlo/ (written by tests/data/make_jax_hlo.py with real JAX,
  together with the inputs and JAX's outputs), so these tests need no JAX;
- a live JAX when importable: the same programs lowered now, run by minijax and compared
  with what JAX computes.
Each module is parsed with minijax.compiler.hlo.parser.parse_module, verified, printed and
re-parsed (print -> parse -> print is the identity), evaluated with the reference evaluator,
and run on the CPU backend through minijax.tools.run_hlo (the command-line tool's API).
"""

import glob
import os
import sys

import numpy as np
import pytest

from minijax.compiler.evaluator import evaluate_module
from minijax.compiler.hlo.parser import parse_module
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.hlo.verifier import verify_module
from minijax.tools import run_hlo

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
FIXTURES = sorted(glob.glob(os.path.join(DATA, "jax_hlo", "*.hlo")))
sys.path.insert(0, DATA)
import make_jax_hlo  # noqa: E402


def _name(path):
    return os.path.basename(path)[: -len(".hlo")]


def _close(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check_module_text(text: str, args, expected, tmp_path, label: str) -> None:
    """Parse, verify, round-trip, evaluate and run `text` on cpu; compare with expected."""
    module = parse_module(text)
    verify_module(module)
    printed = module_to_text(module)
    assert module_to_text(parse_module(printed)) == printed, f"{label}: round trip"
    assert len(module.entry.parameters) == len(args)
    outs = evaluate_module(module, list(args))
    assert len(outs) == len(expected), f"{label}: {len(outs)} outputs, JAX has {len(expected)}"
    for i, (g, w) in enumerate(zip(outs, expected, strict=True)):
        _close(g, w, f"{label} out{i} [evaluator]")

    path = tmp_path / f"{label}.hlo"
    path.write_text(text)
    np.savez(tmp_path / "args.npz", **{f"arg{i}": np.asarray(a) for i, a in enumerate(args)})
    status = run_hlo.run([str(path), "--args", str(tmp_path / "args.npz"), "--out",
                          str(tmp_path / "out.npz"), "--backend", "cpu", "--compare",
                          "interpreter", "--fail-on-mismatch"])
    assert status == 0, f"{label}: run_hlo exited with {status}"
    got = np.load(tmp_path / "out.npz")
    assert len(got.files) == len(expected)
    for i, w in enumerate(expected):
        _close(got[f"out{i}"], w, f"{label} out{i} [cpu]")


@pytest.mark.parametrize("path", FIXTURES, ids=_name)
def test_jax_fixture_parses_round_trips_and_runs(path, tmp_path):
    with open(path) as f:
        text = f.read()
    data = np.load(path[: -len(".hlo")] + ".npz")
    n_args = sum(k.startswith("arg") for k in data.files)
    n_outs = sum(k.startswith("out") for k in data.files)
    args = [data[f"arg{i}"] for i in range(n_args)]
    expected = [data[f"out{i}"] for i in range(n_outs)]
    check_module_text(text, args, expected, tmp_path, _name(path))
    # minijax prints JAX's text back unchanged (names, layouts, attributes).
    assert module_to_text(parse_module(text)).strip() == text.strip()


def test_fixtures_cover_every_program():
    assert {_name(p) for p in FIXTURES} == set(make_jax_hlo.NAMES)


@pytest.fixture(scope="module")
def jax_programs():
    pytest.importorskip("jax")
    programs = make_jax_hlo.programs()
    assert set(programs) == set(make_jax_hlo.NAMES)
    return programs


@pytest.mark.parametrize("name", make_jax_hlo.NAMES)
def test_live_jax_hlo_runs_like_jax(name, jax_programs, tmp_path):
    import jax
    fn, args = jax_programs[name]
    text = make_jax_hlo.hlo_text(fn, args)
    expected = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(fn)(*args))]
    check_module_text(text, args, expected, tmp_path, name)


def test_live_jax_while_loop_with_other_trip_counts(jax_programs, tmp_path):
    import jax
    fn, (n, x) = jax_programs["fori_loop"]
    text = make_jax_hlo.hlo_text(fn, (n, x))
    module = parse_module(text)
    for trips in (0, 1, 9):
        want = np.asarray(jax.jit(fn)(np.int32(trips), x))
        _close(evaluate_module(module, [np.int32(trips), x])[0], want, f"trips={trips}")
