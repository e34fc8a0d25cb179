"""The codegen target hook: math routines and intrinsics are named by the current Target."""

import pytest

pytest.importorskip("llvmlite", reason="code generation needs llvmlite")

import llvmlite.ir as ir  # noqa: E402

from minijax.compiler.codegen import target  # noqa: E402
from minijax.compiler.codegen.cpu.loops import emit_kernel  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

HLO = """HloModule m

ENTRY e {
  x = f64[8] parameter(0)
  t = f64[8] tan(x)
  s = f64[8] sine(t)
  ROOT r = f64[8] abs(s)
}
"""


def _ir(tgt=None) -> str:
    module = ir.Module(name="m")
    comp = parse_module(HLO).entry
    if tgt is None:
        emit_kernel(module, "k", comp)
    else:
        with target.generating_for(tgt):
            emit_kernel(module, "k", comp)
    return str(module)


def test_cpu_target_uses_c_math_names():
    text = _ir()
    assert target.current() is target.CPU
    assert 'declare double @"tan"(double' in text or "declare double @tan(double" in text
    assert "llvm.sin.f64" in text and "llvm.fabs" in text


def test_other_target_renames_math_functions_and_intrinsics():
    gpu_like = target.Target("test-gpu", global_address_space=1, shared_address_space=3,
                             vector_bytes=16,
                             math_functions={"tan": "__dev_tan", "llvm.sin": "__dev_sin",
                                             "llvm.fabs": "llvm.fabs"})
    text = _ir(gpu_like)
    assert "__dev_tan" in text and "__dev_sin" in text
    assert "@tan(" not in text and "@\"tan\"(" not in text and "llvm.sin.f64" not in text
    assert target.current() is target.CPU  # restored after the block
