"""A failed CPU compile leaves nothing behind (issue 14): LLJIT keeps the name of a library
whose link failed, so every retry of the same program failed with "Library name ... is
already in use" instead of compiling (or repeating the real error)."""

from __future__ import annotations

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding", reason="the CPU backend needs llvmlite")

import minijax as jax  # noqa: E402
import minijax.numpy as jnp  # noqa: E402
from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER, get_jit  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402


def _failing_link(monkeypatch):
    """Make the next links fail inside LLJIT (after it has created the library)."""
    real = llvm.JITLibraryBuilder.export_symbol

    def export_missing_too(self, name):
        real(self, "mj_symbol_no_object_defines")
        return real(self, name)
    monkeypatch.setattr(llvm.JITLibraryBuilder, "export_symbol", export_missing_too)


def test_backend_compile_retry_after_failed_link(monkeypatch):
    text = ("HloModule retry_after_failure\nENTRY main {\n  x = f32[5] parameter(0)\n"
            "  ROOT r = f32[5] exponential(x)\n}\n")
    with monkeypatch.context() as m:
        _failing_link(m)
        with pytest.raises(RuntimeError, match="could not link.*mj_symbol_no_object_defines"):
            CpuBackend().compile(parse_module(text))
    exe = CpuBackend().compile(parse_module(text))
    np.testing.assert_allclose(exe.execute([np.ones(5, np.float32)])[0], np.e, rtol=1e-6)


def test_jit_retry_after_failed_compile(monkeypatch):
    def f(x):
        return jnp.sum(jnp.tanh(x) * 3.25, axis=0)

    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    with monkeypatch.context() as m:
        _failing_link(m)
        with pytest.raises(RuntimeError):
            jax.jit(f, backend="cpu")(x)
    np.testing.assert_allclose(np.asarray(jax.jit(f, backend="cpu")(x)),
                               (np.tanh(x) * 3.25).sum(axis=0), rtol=1e-5, atol=1e-5)


def test_unresolved_symbol_repeats_its_error():
    """A module calling a function nobody defines fails the same way every time."""
    ir_text = f"""
declare double @mj_no_such_function(double)
define double @{SYMBOL_PLACEHOLDER}calls_missing(double %x) {{
  %y = call double @mj_no_such_function(double %x)
  ret double %y
}}
"""
    for _ in range(2):
        with pytest.raises(RuntimeError) as info:
            get_jit().compile(ir_text, [f"{SYMBOL_PLACEHOLDER}calls_missing"])
        assert "already in use" not in str(info.value)
        assert "could not link" in str(info.value)
