"""Run GPU kernel modules on the host CPU, over the whole grid, to check their logic.

`HostKernels(ir_text)` takes the very LLVM module that becomes PTX and re-targets it to the
host; nothing else in the kernels changes:
- the address spaces are dropped (global and shared memory become ordinary memory);
- each kernel gets four trailing i32 arguments (tid, ntid, ctaid, nctaid) and every read of
  a special register becomes a use of the matching argument;
- `barrier0` becomes a wait on a pthread barrier of all the block's threads, and
  `shfl.sync.down` a host function that writes the lane's value into a per-warp slot array,
  waits on the warp's pthread barrier and reads the slot `delta` lanes below (two slot
  arrays used alternately, so one barrier per shuffle is enough).
Every load and store through a global pointer is bounds-checked: it goes through
`minijax_emu_checked`, which looks the accessed bytes up in the launch's buffers (the numpy
arrays given, or the (address, bytes) ranges in `sizes`); an access outside all of them is
redirected to a sink and the launch raises IndexError naming the kernel and the address.
Kernels without barriers or shuffles run one thread after another; the others run one OS
thread per GPU thread of a block, the blocks one after another (so a block's shared memory
is the module's one copy of each shared array). `launch(fn, grid, block, buffers)` can be
given a smaller grid than the real launch: every kernel strides over the grid, so that
checks the grid-stride loops too. A launch that does not finish in LAUNCH_TIMEOUT seconds
(threads of a block waiting at different barriers: a kernel bug) raises instead of hanging.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import threading

import llvmlite.binding as llvm
import numpy as np

from minijax.compiler.codegen.gpu import nvvm
from minijax.compiler.codegen.gpu.kernels import emit_gpu_kernel

_SREG_ARGS = {
    "llvm.nvvm.read.ptx.sreg.tid.x": "%emu.tid",
    "llvm.nvvm.read.ptx.sreg.ntid.x": "%emu.ntid",
    "llvm.nvvm.read.ptx.sreg.ctaid.x": "%emu.ctaid",
    "llvm.nvvm.read.ptx.sreg.nctaid.x": "%emu.nctaid",
}
assert set(_SREG_ARGS) | {nvvm.BARRIER, nvvm.SHFL_DOWN} == set(nvvm.INTRINSICS)
LAUNCH_TIMEOUT = 120.0
_MAX_THREADS = 1024
_BARRIER_BYTES = 128    # >= sizeof(pthread_barrier_t) on every glibc/musl target

# Host implementations of the barrier and the shuffle (appended to each host module).
_RUNTIME_IR = f"""
@minijax_emu_block_barrier = global i8* null
@minijax_emu_warp_barriers = global i8* null
@minijax_emu_slots = global [2 x [{_MAX_THREADS} x i32]] zeroinitializer
@minijax_emu_parity = global [{_MAX_THREADS} x i32] zeroinitializer
declare i32 @pthread_barrier_wait(i8*)

define void @minijax_emu_barrier() {{
  %p = load i8*, i8** @minijax_emu_block_barrier
  %r = call i32 @pthread_barrier_wait(i8* %p)
  ret void
}}

define i32 @minijax_emu_shfl_down(i32 %mask, i32 %v, i32 %delta, i32 %clamp, i32 %tid) {{
  %lane = urem i32 %tid, 32
  %warp = udiv i32 %tid, 32
  %pp = getelementptr [{_MAX_THREADS} x i32], [{_MAX_THREADS} x i32]* @minijax_emu_parity,
        i32 0, i32 %tid
  %par = load i32, i32* %pp
  %npar = xor i32 %par, 1
  store i32 %npar, i32* %pp
  %mine = getelementptr [2 x [{_MAX_THREADS} x i32]], [2 x [{_MAX_THREADS} x i32]]*
          @minijax_emu_slots, i32 0, i32 %par, i32 %tid
  store i32 %v, i32* %mine
  %bars = load i8*, i8** @minijax_emu_warp_barriers
  %off = mul i32 %warp, {_BARRIER_BYTES}
  %bar = getelementptr i8, i8* %bars, i32 %off
  %w = call i32 @pthread_barrier_wait(i8* %bar)
  %src = add i32 %lane, %delta
  %ok = icmp ule i32 %src, %clamp
  %srctid = add i32 %tid, %delta
  %idx = select i1 %ok, i32 %srctid, i32 %tid
  %theirs = getelementptr [2 x [{_MAX_THREADS} x i32]], [2 x [{_MAX_THREADS} x i32]]*
            @minijax_emu_slots, i32 0, i32 %par, i32 %idx
  %r = load i32, i32* %theirs
  ret i32 %r
}}
"""
_COOPERATIVE = ("minijax_emu_barrier", "minijax_emu_shfl_down")
_MAX_RANGES = 256
# The bounds check every global load and store goes through (see the module docstring).
_CHECK_IR = f"""
@minijax_emu_ranges = global [{_MAX_RANGES} x [2 x i64]] zeroinitializer
@minijax_emu_nranges = global i64 0
@minijax_emu_fault = global [3 x i64] zeroinitializer
@minijax_emu_sink = global [64 x i64] zeroinitializer

define i8* @minijax_emu_checked(i8* %p, i64 %size) {{
entry:
  %a = ptrtoint i8* %p to i64
  %e = add i64 %a, %size
  %n = load i64, i64* @minijax_emu_nranges
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %next]
  %done = icmp uge i64 %i, %n
  br i1 %done, label %bad, label %body
body:
  %lop = getelementptr [{_MAX_RANGES} x [2 x i64]], [{_MAX_RANGES} x [2 x i64]]*
         @minijax_emu_ranges, i64 0, i64 %i, i64 0
  %lo = load i64, i64* %lop
  %hip = getelementptr [{_MAX_RANGES} x [2 x i64]], [{_MAX_RANGES} x [2 x i64]]*
         @minijax_emu_ranges, i64 0, i64 %i, i64 1
  %hi = load i64, i64* %hip
  %ge = icmp uge i64 %a, %lo
  %le = icmp ule i64 %e, %hi
  %in = and i1 %ge, %le
  br i1 %in, label %ok, label %next
next:
  %i1 = add i64 %i, 1
  br label %loop
ok:
  ret i8* %p
bad:
  %cp = getelementptr [3 x i64], [3 x i64]* @minijax_emu_fault, i64 0, i64 0
  %c = load i64, i64* %cp
  %c1 = add i64 %c, 1
  store i64 %c1, i64* %cp
  %ap = getelementptr [3 x i64], [3 x i64]* @minijax_emu_fault, i64 0, i64 1
  store i64 %a, i64* %ap
  %sp = getelementptr [3 x i64], [3 x i64]* @minijax_emu_fault, i64 0, i64 2
  store i64 %size, i64* %sp
  %sink = bitcast [64 x i64]* @minijax_emu_sink to i8*
  ret i8* %sink
}}
"""
_PTR = r'(%"[^"]*"|%[-\w.$]+)'
_LOAD = re.compile(r'^(\s*%\S+ = load (.+?), )(.+?) addrspace\(1\)\* ' + _PTR + r'(.*)$')
_STORE = re.compile(r'^(\s*store .+, )(.+?) addrspace\(1\)\* ' + _PTR + r'(.*)$')


def _checked_accesses(text: str) -> str:
    """Route every global load/store through minijax_emu_checked (before the address
    spaces are dropped, so only global accesses are rewritten)."""
    out = []
    count = 0
    for line in text.split("\n"):
        m = _LOAD.match(line)
        if m:
            head, ty, ptr, tail = m.group(1), m.group(3), m.group(4), m.group(5)
        else:
            m = _STORE.match(line)
            if not m:
                out.append(line)
                continue
            head, ty, ptr, tail = m.group(1), m.group(2), m.group(3), m.group(4)
        v = f"%emu.c{count}"
        count += 1
        pty = f"{ty} addrspace(1)*"
        out += [f"  {v}.0 = bitcast {pty} {ptr} to i8 addrspace(1)*",
                f"  {v}.1 = getelementptr {ty}, {pty} {ptr}, i64 1",
                f"  {v}.2 = ptrtoint {pty} {v}.1 to i64",
                f"  {v}.3 = ptrtoint {pty} {ptr} to i64",
                f"  {v}.4 = sub i64 {v}.2, {v}.3",
                f"  {v}.5 = call i8 addrspace(1)* @minijax_emu_checked("
                f"i8 addrspace(1)* {v}.0, i64 {v}.4)",
                f"  {v}.6 = bitcast i8 addrspace(1)* {v}.5 to {pty}",
                f"{head}{pty} {v}.6{tail}"]
    return "\n".join(out)


_launch_lock = threading.Lock()
_libc = None


def _pthread():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("pthread") or ctypes.util.find_library("c"))
        _libc.pthread_barrier_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                               ctypes.c_uint]
        _libc.pthread_barrier_destroy.argtypes = [ctypes.c_void_p]
    return _libc


_CALL_SREG = re.compile(r'(%"?[\w.]+"?) = call i32 @"?(llvm\.nvvm\.read\.ptx\.sreg\.\w+\.x)"?\(\)')
_CALL_SHFL = re.compile(r'call i32 @"?llvm\.nvvm\.shfl\.sync\.down\.i32"?\(([^)]*)\)')
_DECLARE = re.compile(r'^declare [^@]*@"?llvm\.nvvm\.[\w.]+"?\(.*$', re.M)
_DEFINE = re.compile(r'^(define [^@]*@"?[^"(\s]+"?\()(.*?)(\)[^{\n]*\n?\{)', re.M)


def host_ir(ir_text: str) -> str:
    """The kernel module re-targeted to the host (see the module docstring)."""
    text = re.sub(r'^target (triple|datalayout) = ".*"$', "", ir_text, flags=re.M)
    text = _checked_accesses(text)
    text = re.sub(r" addrspace\(\d+\)", "", text)
    text = _DECLARE.sub("", text)
    text = _CALL_SREG.sub(lambda m: f"{m.group(1)} = add i32 {_SREG_ARGS[m.group(2)]}, 0", text)
    text = _CALL_SHFL.sub(lambda m: f"call i32 @minijax_emu_shfl_down({m.group(1)}, "
                                    f"i32 %emu.tid)", text)
    text = re.sub(r'call void @"?llvm\.nvvm\.barrier0"?\(\)', "call void @minijax_emu_barrier()",
                  text)
    extra = "i32 %emu.tid, i32 %emu.ntid, i32 %emu.ctaid, i32 %emu.nctaid"
    text = _DEFINE.sub(lambda m: m.group(1) + (m.group(2) + ", " if m.group(2) else "")
                       + extra + m.group(3), text)
    return text + _RUNTIME_IR + _CHECK_IR


_libraries_loaded = False


def _load_runtime_libraries() -> None:
    """Native target, and libgcc_s for the half-precision conversion helpers
    (__extendhfsf2, __truncsfhf2, ...) that float16 code calls on the host."""
    global _libraries_loaded
    if not _libraries_loaded:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        gcc_s = ctypes.util.find_library("gcc_s")
        if gcc_s:
            try:
                llvm.load_library_permanently(gcc_s)
            except RuntimeError:
                pass
        _libraries_loaded = True


def _function_bodies(text: str) -> dict[str, str]:
    bodies = {}
    for m in re.finditer(r'^define [^@]*@"?([^"(\s]+)"?\((.*?)^}', text, flags=re.M | re.S):
        bodies[m.group(1)] = m.group(0)
    return bodies


class HostKernels:
    """The kernels of one GPU module, compiled for the host (see the module docstring)."""

    def __init__(self, ir_text: str):
        _load_runtime_libraries()
        self.text = host_ir(ir_text)
        mod = llvm.parse_assembly(self.text)
        mod.triple = llvm.get_process_triple()
        tm = llvm.Target.from_triple(mod.triple).create_target_machine(opt=1)
        mod.data_layout = str(tm.target_data)
        mod.verify()
        self._engine = llvm.create_mcjit_compiler(mod, tm)
        self._engine.finalize_object()
        self._module = mod
        self._cooperative = {name: any(c in body for c in _COOPERATIVE)
                             for name, body in _function_bodies(self.text).items()}

    def launch(self, function: str, grid: int, block: int, buffers: list,
               sizes: list | None = None) -> None:
        """Run `function` over `grid` blocks of `block` threads on `buffers` (numpy arrays
        or addresses, in the kernel ABI's order). Accesses must stay inside the numpy arrays
        and, for addresses, the byte counts in `sizes` (one per buffer; None: an address is
        not checked, the whole launch then goes unchecked); else IndexError."""
        if block > _MAX_THREADS:
            raise ValueError(f"emulated block of {block} threads (at most {_MAX_THREADS})")
        addr = self._engine.get_function_address(function)
        if not addr:
            raise KeyError(f"no kernel {function!r} in the module")
        ptrs = [b if isinstance(b, int) else (b.ctypes.data if isinstance(b, np.ndarray)
                                              else 0) for b in buffers]
        argtypes = [ctypes.c_void_p] * len(ptrs) + [ctypes.c_int32] * 4
        fn = ctypes.CFUNCTYPE(None, *argtypes)(addr)
        with _launch_lock:
            self._set_ranges(buffers, ptrs, sizes)
            if self._cooperative.get(function, True):
                self._run_threads(fn, ptrs, grid, block)
            else:
                for blk in range(grid):
                    for t in range(block):
                        fn(*ptrs, t, block, blk, grid)
            fault = (ctypes.c_int64 * 3).from_address(
                self._engine.get_global_value_address("minijax_emu_fault"))
            if fault[0]:
                count, where, size = fault[0], fault[1], fault[2]
                fault[0] = 0
                raise IndexError(
                    f"kernel {function}: {count} global access(es) outside its buffers, e.g. "
                    f"{size} bytes at 0x{where:x} (buffers: " + ", ".join(
                        f"0x{p:x}+{n}" for p, n in self._ranges) + ")")

    def _set_ranges(self, buffers, ptrs, sizes) -> None:
        ranges = []
        unchecked = False
        for k, (b, p) in enumerate(zip(buffers, ptrs)):
            n = b.nbytes if isinstance(b, np.ndarray) else (
                sizes[k] if sizes is not None and k < len(sizes) else None)
            if n is None:
                unchecked = unchecked or p != 0
            elif p:
                ranges.append((p, int(n)))
        if len(ranges) > _MAX_RANGES:
            raise ValueError(f"emulated launch with {len(ranges)} buffers (at most "
                             f"{_MAX_RANGES})")
        g = self._engine.get_global_value_address
        table = (ctypes.c_uint64 * (2 * _MAX_RANGES)).from_address(g("minijax_emu_ranges"))
        for k, (p, n) in enumerate(ranges):
            table[2 * k], table[2 * k + 1] = p, p + n
        if unchecked:       # the whole address space: nothing is reported
            table[0], table[1], ranges = 0, 2 ** 64 - 1, [(0, 2 ** 64 - 1)]
        ctypes.c_int64.from_address(g("minijax_emu_nranges")).value = len(ranges)
        self._ranges = ranges

    def _run_threads(self, fn, ptrs, grid: int, block: int) -> None:
        libc = _pthread()
        warps = -(-block // nvvm.WARP)
        block_bar = ctypes.create_string_buffer(_BARRIER_BYTES)
        warp_bars = ctypes.create_string_buffer(_BARRIER_BYTES * warps)
        libc.pthread_barrier_init(block_bar, None, block)
        for w in range(warps):
            libc.pthread_barrier_init(ctypes.addressof(warp_bars) + w * _BARRIER_BYTES, None,
                                      min(nvvm.WARP, block - w * nvvm.WARP))
        g = self._engine.get_global_value_address
        ctypes.c_void_p.from_address(g("minijax_emu_block_barrier")).value = \
            ctypes.addressof(block_bar)
        ctypes.c_void_p.from_address(g("minijax_emu_warp_barriers")).value = \
            ctypes.addressof(warp_bars)
        ctypes.memset(g("minijax_emu_parity"), 0, 4 * _MAX_THREADS)
        end_block = threading.Barrier(block)

        def thread_main(t):
            for blk in range(grid):
                fn(*ptrs, t, block, blk, grid)
                end_block.wait()     # the next block reuses the shared arrays

        threads = [threading.Thread(target=thread_main, args=(t,), daemon=True)
                   for t in range(block)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(LAUNCH_TIMEOUT)
            if th.is_alive():
                raise RuntimeError(f"emulated kernel did not finish in {LAUNCH_TIMEOUT} s: "
                                   f"threads of a block wait at different barriers")
        libc.pthread_barrier_destroy(block_bar)
        for w in range(warps):
            libc.pthread_barrier_destroy(ctypes.addressof(warp_bars) + w * _BARRIER_BYTES)


__all__ = ["HostKernels", "LAUNCH_TIMEOUT", "host_ir", "run_computation"]


def run_computation(comp, args: list, max_blocks: int | None = 3, name: str = "k") -> list:
    """Emit `comp` (a fused computation) as GPU kernels, run them emulated on `args`
    (numpy arrays, one per parameter) and return the outputs. Each launch's grid is cut to
    `max_blocks` blocks (None: the real grid), which the grid-stride loops must absorb."""

    module = nvvm.new_module(name)
    kernel = emit_gpu_kernel(module, name, comp)
    host = HostKernels(str(module))
    ins = [np.ascontiguousarray(a) for a in args]
    outs = [_garbage(s) for s in kernel.output_shapes]
    scratch = np.zeros(max(kernel.scratch_bytes, 16), np.uint8)
    for launch in kernel.launches:
        grid = launch.grid if max_blocks is None else min(launch.grid, max_blocks)
        host.launch(launch.function, grid, launch.block, ins + outs + [scratch])
    return outs


def _garbage(shape) -> np.ndarray:
    """An output buffer full of a recognizable non-value (0xAB bytes)."""
    nbytes = max(shape.size, 1) * shape.dtype.itemsize
    return np.full(nbytes, 0xAB, np.uint8).view(shape.dtype)[:shape.size].reshape(shape.dims)
