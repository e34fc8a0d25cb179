"""python -m minijax.tools.api_coverage: JAX's public names minijax lacks, per module."""

import functools
import subprocess
import sys
import types

import pytest

from minijax.tools import api_coverage


def _module(name, **attrs):
    mod = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


def fn():
    """A stand-in for any public function."""


def _fake_world():
    """A fake `jax` (with numpy, scipy.stats.norm, sharding) and a fake `minijax`."""
    norm = _module("jax.scipy.stats.norm", logpdf=fn, cdf=fn, _private=fn)
    stats = _module("jax.scipy.stats", norm=norm, mode=fn)
    jnp = _module("jax.numpy", add=fn, sub=fn, unstack=fn, partial=functools.partial)
    jax = _module("jax", numpy=jnp, jit=fn, grad=fn, sharding=_module("jax.sharding"),
                  np_module=sys)  # `sys` is a foreign module: not part of the API
    ours_norm = _module("minijax.scipy.stats.norm", logpdf=fn)
    ours = {
        "jax": jax, "jax.numpy": jnp, "jax.scipy.stats": stats, "jax.scipy.stats.norm": norm,
        "minijax": _module("minijax", jit=fn, grad=fn),
        "minijax.numpy": _module("minijax.numpy", add=fn, unstack=fn),
        "minijax.scipy.stats": _module("minijax.scipy.stats", norm=ours_norm),
        "minijax.scipy.stats.norm": ours_norm,
    }
    return ours.get


def test_fake_modules_report_missing_names_and_percentages():
    results = api_coverage.coverage(("jax", "jax.numpy", "jax.scipy.stats.*", "jax.lax"),
                                    import_module=_fake_world())
    by_name = {r.name: r for r in results}
    # jax.lax does not exist in the fake JAX: skipped; stats.* expands to its submodules
    assert list(by_name) == ["jax", "jax.numpy", "jax.scipy.stats.norm"]
    assert by_name["jax"].names == ["grad", "jit", "numpy", "sharding"]
    assert by_name["jax"].missing == ["numpy", "sharding"]
    assert by_name["jax.numpy"].missing == ["sub"]  # functools.partial is not API
    assert by_name["jax.numpy"].present == 2 and by_name["jax.numpy"].percent == pytest.approx(
        200 / 3)
    assert by_name["jax.scipy.stats.norm"].missing == ["cdf"]
    text = api_coverage.render(results)
    assert "jax.numpy: 2/3 (66.7%)" in text
    assert "missing (1): sub" in text
    assert text.splitlines()[-1] == ("total: 5/9 public JAX names present (55.6%), 4 missing, "
                                     "over 3 modules")
    assert "missing" not in api_coverage.render(results, summary_only=True).replace(
        "4 missing", "")


def test_absent_minijax_module_is_reported():
    get = _fake_world()
    result = api_coverage.compare("jax.sharding", _module("jax.sharding", Mesh=fn), None)
    assert result.ours_missing and result.missing == ["Mesh"] and result.percent == 0
    assert "minijax.sharding does not exist" in api_coverage.render([result])
    assert api_coverage.our_name("jax.scipy.linalg") == "minijax.scipy.linalg"
    assert get("jax") is not None


def test_main_without_jax_exits_with_a_hint(capsys):
    assert api_coverage.main([], import_module=lambda name: None) == 2
    err = capsys.readouterr().err
    assert "JAX is not importable" in err and "pip install jax" in err


def test_main_with_fake_jax(capsys):
    assert api_coverage.main(["--modules", "jax.numpy"], import_module=_fake_world()) == 0
    out = capsys.readouterr().out
    assert out.startswith("jax.numpy: 2/3 (66.7%)")


def test_against_installed_jax():
    pytest.importorskip("jax")
    results = {r.name: r for r in api_coverage.coverage(("jax.numpy", "jax.scipy.stats",
                                                         "jax.scipy.stats.*"))}
    assert results["jax.scipy.stats"].missing == []
    assert results["jax.scipy.stats.norm"].missing == []
    assert "unstack" not in results["jax.numpy"].missing
    assert results["jax.numpy"].percent > 80


def test_command_line_runs():
    pytest.importorskip("jax")
    out = subprocess.run([sys.executable, "-m", "minijax.tools.api_coverage", "--modules",
                          "jax.typing,jax.scipy.stats", "--summary-only"],
                         capture_output=True, text=True, check=True).stdout
    assert "jax.typing: 2/2 (100.0%)" in out and out.strip().splitlines()[-1].startswith(
        "total:")
