"""What native spin-waits are made of: word slots, the CPU's pause hint, yielding the core,
and reading the monotonic clock (teams, native collectives and mailboxes use them).

`sched_yield` and `clock_gettime` are called through addresses the caller's Python put in
a word (the JIT links no libc symbol by name this way, and a test can pass its own).
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import I32, I64

_I64P = I64.as_pointer()
_CLOCK_MONOTONIC = 1         # Linux's clockid_t


def spin_hint_for(machine: str) -> str:
    """The spin-wait hint of a CPU (`platform.machine()`): "pause" (x86), "yield" (AArch64),
    or "" for none."""
    machine = machine.lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        return "pause"
    if machine in ("aarch64", "arm64"):
        return "yield"
    return ""


def slot(b: ir.IRBuilder, block, k):
    """Pointer to int64 word `k` (an int or an i64 value) of `block`."""
    return b.gep(block, [k if isinstance(k, ir.Value) else ir.Constant(I64, k)], inbounds=True)


def pause(b: ir.IRBuilder, spin_hint: str) -> None:
    """The CPU's spin-wait hint, as an intrinsic (the JIT has no inline-assembly parser)."""
    module = b.module
    if spin_hint == "pause":
        name, fnty, args = "llvm.x86.sse2.pause", ir.FunctionType(ir.VoidType(), []), []
    elif spin_hint == "yield":
        name, fnty = "llvm.aarch64.hint", ir.FunctionType(ir.VoidType(), [I32])
        args = [ir.Constant(I32, 1)]
    else:
        return
    fn = module.globals.get(name) or ir.Function(module, fnty, name)
    b.call(fn, args)


def yield_core(b: ir.IRBuilder, address) -> None:
    """Call `sched_yield` at i64 `address` (nothing when it is 0)."""
    with b.if_then(b.icmp_unsigned("!=", address, ir.Constant(I64, 0))):
        b.call(b.inttoptr(address, ir.FunctionType(I32, []).as_pointer()), [])


def timespec(b: ir.IRBuilder):
    """Room for a `struct timespec`; call in the function's entry block (an alloca in a
    loop would grow the stack every round)."""
    return b.alloca(I64, ir.Constant(I64, 2), name="timespec")


def monotonic_ns(b: ir.IRBuilder, clock_address, spec):
    """clock_gettime(CLOCK_MONOTONIC) in ns, through i64 `clock_address`, into `spec`."""
    fnty = ir.FunctionType(I32, [I32, _I64P])
    b.call(b.inttoptr(clock_address, fnty.as_pointer()), [ir.Constant(I32, _CLOCK_MONOTONIC),
                                                          spec])
    return b.add(b.mul(b.load(slot(b, spec, 0)), ir.Constant(I64, 1_000_000_000)),
                 b.load(slot(b, spec, 1)))


__all__ = ["monotonic_ns", "pause", "slot", "spin_hint_for", "timespec", "yield_core"]
