"""NVVM building blocks in llvmlite IR: special registers, barriers, warp shuffles,
shared-memory arrays and kernel annotations.

Every GPU-specific intrinsic the kernel emitters use is declared here, under the names in
`INTRINSICS`: the host emulator (emulate.py) rebinds exactly these names to host
implementations, so a kernel that runs there uses nothing else.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.llvm_types import F16, F32, F64, I1, I32, I64, bit_width, const
from minijax.compiler.codegen.target import Target

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
WARP = 32
#: The code generation target of GPU kernels (codegen/target.py): global and shared
#: address spaces, 16-byte vector accesses. Float64 routines the CPU takes from the C
#: library have no device implementation: HOST_ONLY_F64 lists the opcodes (kernels.py
#: reports them unsupported on f64).
NVPTX = Target("nvptx", global_address_space=1, shared_address_space=3, vector_bytes=16)
HOST_ONLY_F64 = frozenset({"sine", "cosine", "tan", "erf", "power", "atan2", "cbrt"})
GLOBAL = NVPTX.global_address_space
SHARED = NVPTX.shared_address_space

_SREGS = {
    "tid": "llvm.nvvm.read.ptx.sreg.tid.x",
    "ntid": "llvm.nvvm.read.ptx.sreg.ntid.x",
    "ctaid": "llvm.nvvm.read.ptx.sreg.ctaid.x",
    "nctaid": "llvm.nvvm.read.ptx.sreg.nctaid.x",
}
BARRIER = "llvm.nvvm.barrier0"
SHFL_DOWN = "llvm.nvvm.shfl.sync.down.i32"
#: Every NVVM intrinsic a generated kernel may call.
INTRINSICS = tuple(_SREGS.values()) + (BARRIER, SHFL_DOWN)
_FULL_MASK = -1
_CLAMP = WARP - 1


def new_module(name: str) -> ir.Module:
    """An empty llvmlite module for the NVPTX target."""
    module = ir.Module(name=name)
    module.triple = TRIPLE
    module.data_layout = DATA_LAYOUT
    return module


def _declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, args), name)


def sreg(b: ir.IRBuilder, which: str):
    """A special register ("tid", "ntid", "ctaid", "nctaid"; x dimension) as an i64."""
    fn = _declare(b.module, _SREGS[which], I32, [])
    return b.zext(b.call(fn, []), I64)


def barrier(b: ir.IRBuilder) -> None:
    """__syncthreads(): every thread of the block must reach it."""
    b.call(_declare(b.module, BARRIER, ir.VoidType(), []), [])


def _shfl_i32(b: ir.IRBuilder, v, delta: int):
    fn = _declare(b.module, SHFL_DOWN, I32, [I32, I32, I32, I32])
    return b.call(fn, [const(I32, _FULL_MASK), v, const(I32, delta), const(I32, _CLAMP)])


def shfl_down(b: ir.IRBuilder, value, delta: int):
    """The value `delta` lanes below in the warp (the own value where that is past the end):
    every lane of the warp must execute it. Any scalar type (split into 32-bit pieces)."""
    ty = value.type
    if ty == I32:
        return _shfl_i32(b, value, delta)
    if ty == F32:
        return b.bitcast(_shfl_i32(b, b.bitcast(value, I32), delta), F32)
    if ty in (F64, I64):
        bits = b.bitcast(value, I64) if ty == F64 else value
        lo = _shfl_i32(b, b.trunc(bits, I32), delta)
        hi = _shfl_i32(b, b.trunc(b.lshr(bits, const(I64, 32)), I32), delta)
        joined = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), const(I64, 32)))
        return b.bitcast(joined, F64) if ty == F64 else joined
    if ty == F16:
        i16 = ir.IntType(16)
        wide = _shfl_i32(b, b.zext(b.bitcast(value, i16), I32), delta)
        return b.bitcast(b.trunc(wide, i16), F16)
    if isinstance(ty, ir.IntType) and ty.width < 32:
        return b.trunc(_shfl_i32(b, b.zext(value, I32), delta), ty)
    raise NotImplementedError(f"warp shuffle of {ty}")


def shared_array(module: ir.Module, ty: ir.Type, count: int, name: str) -> ir.GlobalVariable:
    """A block-shared array `[count x ty]` (uninitialized, like `__shared__`)."""
    arr = ir.ArrayType(ty, count)
    gv = ir.GlobalVariable(module, arr, module.get_unique_name(name), addrspace=SHARED)
    gv.linkage = "internal"
    gv.initializer = ir.Constant(arr, ir.Undefined)
    gv.align = max(4, bit_width(ty) // 8) if ty != I1 else 4
    return gv


def shared_ptr(b: ir.IRBuilder, gv: ir.GlobalVariable, index):
    """Address of element `index` (i64) of a shared array."""
    return b.gep(gv, [const(I64, 0), index], inbounds=True)


def mark_kernel(module: ir.Module, fn: ir.Function) -> None:
    """Annotate `fn` as a kernel entry point (`.entry` in PTX)."""
    md = module.add_metadata([fn, ir.MetaDataString(module, "kernel"), const(I32, 1)])
    module.add_named_metadata("nvvm.annotations", md)


def global_pointer(ty: ir.Type) -> ir.PointerType:
    """Pointer to `ty` in the global address space (kernel buffer arguments)."""
    return ir.PointerType(ty, addrspace=GLOBAL)
