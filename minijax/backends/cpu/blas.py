"""dot as a direct call of the BLAS gemm that NumPy ships, reading transposed operands free.

`find_blas()` looks for a CBLAS sgemm/dgemm with a known integer width in the libraries
NumPy loaded (OpenBLAS in the NumPy wheels: `scipy_cblas_sgemm64_`, 64-bit integers). It
returns None when there is none; the CPU backend then runs dots through np.matmul, with the
same results.

`gemm_form(instr)` says whether an HLO dot is one gemm per batch element over its operands'
buffers as they are (row-major, batch dims leading, each operand's free and contracting dims
contiguous in either order: the other order is a trans flag), and gives M, N, K and the
flags. `GemmCall` runs such a dot: a small LLVM helper (compiled once per process) reads the
arrays' data pointers and calls gemm once per batch element. Small products are called
through a METH_FASTCALL builtin (~0.1 us, the GIL held) and run with one BLAS thread: on a
2-core machine OpenBLAS's threads cost more than they win there, and badly so when another
process holds a core. Larger ones go through ctypes (the GIL released) on all BLAS threads.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
import threading
from dataclasses import dataclass

import numpy as np

from minijax.backends.cpu import gemm_tuning
from minijax.backends.cpu.thread_pool import get_pool
from minijax.compiler.cache import clear_caches
from minijax.config import config

#: (sgemm, dgemm, integer bits, set_num_threads, get_num_threads) symbol names, in order.
CANDIDATES = (
    ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 64,
     "scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("cblas_sgemm64_", "cblas_dgemm64_", 64,
     "openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("scipy_cblas_sgemm", "scipy_cblas_dgemm", 32,
     "scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
)
#: gemms with batch*M*N*K below this run on one BLAS thread.
SMALL_GEMM_MNK = 1 << 22
#: ... and below this through the fastcall entry (the GIL held: a few microseconds at most).
GIL_GEMM_MNK = 1 << 17
# Larger ones are split over minijax's thread pool (option minijax_dot_split=False /
# MINIJAX_DOT_SPLIT=0: BLAS's own threads).

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
# Layout of a call's int64 parameter block (see _emit_gemm and GemmCall).
_P_GEMM, _P_SETN, _P_GETN, _P_SINGLE, _P_BATCH, _P_M, _P_N, _P_K = range(8)
_P_TA, _P_TB, _P_LDA, _P_LDB, _P_LDC, _P_SA, _P_SB, _P_SC = range(8, 16)
_P_SPLIT, _P_LEN, _P_PIECES, _P_A_STEP, _P_B_STEP, _P_C_STEP = range(16, 22)
_NPARAMS = 22


@dataclass(frozen=True)
class Blas:
    """Addresses of the gemm routines found (0 where absent) and their integer width."""

    sgemm: int
    dgemm: int
    int_bits: int
    set_threads: int
    get_threads: int
    source: str


def _libraries():
    """Handles in which to look the symbols up: NumPy's extension (dlsym also searches the
    libraries it links, where its BLAS is), then BLAS libraries bundled with the wheel."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    yield umath.__file__
    root = os.path.dirname(os.path.dirname(np.__file__))
    for pattern in ("numpy.libs/*blas*", "numpy/.dylibs/*blas*"):
        yield from sorted(glob.glob(os.path.join(root, pattern)))


def _address(lib, name: str) -> int:
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


@functools.lru_cache(maxsize=1)
def find_blas() -> Blas | None:
    """The CBLAS gemm routines NumPy uses, or None (then dots run through np.matmul)."""
    if not config._values["minijax_dot_blas"]:
        return None
    for path in _libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sgemm, dgemm, bits, setn, getn in CANDIDATES:
            s, d = _address(lib, sgemm), _address(lib, dgemm)
            if s and d:
                set_t, get_t = _address(lib, setn), _address(lib, getn)
                if not (set_t and get_t):
                    set_t = get_t = 0
                return Blas(s, d, bits, set_t, get_t, f"{os.path.basename(path)}:{sgemm}")
    return None


def _dims(instr, key):
    return tuple(instr.attrs.get(key, ()))


def gemm_form(instr):
    """(batch, M, N, K, lhs transposed, rhs transposed) if `instr` (a dot) is one gemm per
    batch element over its row-major operands as stored, else None."""
    lhs, rhs = (o.shape for o in instr.operands)
    lb, rb = _dims(instr, "lhs_batch_dims"), _dims(instr, "rhs_batch_dims")
    nb = len(lb)
    if lb != tuple(range(nb)) or rb != lb:
        return None
    pairs = sorted(zip(_dims(instr, "lhs_contracting_dims"),
                       _dims(instr, "rhs_contracting_dims")))
    lc, rc = [p[0] for p in pairs], [p[1] for p in pairs]
    if rc != sorted(rc):
        return None  # K would be flattened in different orders on the two sides
    lf = [d for d in range(nb, lhs.rank) if d not in lc]
    rf = [d for d in range(nb, rhs.rank) if d not in rc]
    lrest, rrest = list(range(nb, lhs.rank)), list(range(nb, rhs.rank))
    if lrest == lf + lc:
        ta = False
    elif lrest == lc + lf:
        ta = True
    else:
        return None
    if rrest == rc + rf:
        tb = False
    elif rrest == rf + rc:
        tb = True
    else:
        return None
    batch = math.prod(lhs.dims[:nb])
    m = math.prod(lhs.dims[d] for d in lf)
    k = math.prod(lhs.dims[d] for d in lc)
    n = math.prod(rhs.dims[d] for d in rf)
    return batch, m, n, k, ta, tb


def _emit_gemm(module, name: str, fty, ity) -> None:
    """`name(i8** bufs, i64 start, i64 end)`: bufs = [params, a, b, c]. The call's work is
    cut into params[_P_PIECES] pieces along batch, M or N (params[_P_SPLIT]); this runs
    pieces [start, end): one gemm per batch element of the piece, with one BLAS thread
    around the calls when params[_P_SINGLE] is set."""
    import llvmlite.ir as ir

    from minijax.compiler.codegen.llvm_types import I32, I64
    i8p = ir.IntType(8).as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), I64, I64]),
                     name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def c64(v):
        return ir.Constant(I64, v)

    bufs = [b.load(b.gep(fn.args[0], [c64(k)], inbounds=True)) for k in range(4)]
    params = b.bitcast(bufs[0], I64.as_pointer())
    p = [b.load(b.gep(params, [c64(k)], inbounds=True)) for k in range(_NPARAMS)]
    fp = fty.as_pointer()
    gemm_ty = ir.FunctionType(ir.VoidType(), [I32, I32, I32, ity, ity, ity, fty, fp, ity, fp,
                                              ity, fty, fp, ity])
    gemm = b.inttoptr(p[_P_GEMM], gemm_ty.as_pointer())
    set_ty = ir.FunctionType(ir.VoidType(), [I32]).as_pointer()
    get_ty = ir.FunctionType(I32, []).as_pointer()

    def blasint(v):
        return v if ity is I64 else b.trunc(v, ity)

    def trans(flag):
        return b.select(b.icmp_signed("!=", flag, c64(0)),
                        ir.Constant(I32, _TRANS), ir.Constant(I32, _NO_TRANS))

    # This call's range [lo, hi) of the split dimension, and what it means for each operand.
    lo = b.sdiv(b.mul(fn.args[1], p[_P_LEN]), p[_P_PIECES])
    hi = b.sdiv(b.mul(fn.args[2], p[_P_LEN]), p[_P_PIECES])
    split = p[_P_SPLIT]
    by_batch = b.icmp_signed("==", split, c64(0))
    first = b.select(by_batch, lo, c64(0))
    last = b.select(by_batch, hi, p[_P_BATCH])
    m = b.select(b.icmp_signed("==", split, c64(1)), b.sub(hi, lo), p[_P_M])
    n = b.select(b.icmp_signed("==", split, c64(2)), b.sub(hi, lo), p[_P_N])
    bases = [b.gep(buf, [b.mul(lo, p[step])])
             for buf, step in zip(bufs[1:], (_P_A_STEP, _P_B_STEP, _P_C_STEP))]

    single = b.and_(b.icmp_signed("!=", p[_P_SINGLE], c64(0)),
                    b.icmp_signed("!=", p[_P_SETN], c64(0)))
    entry = b.block
    with b.if_then(single):
        got = b.call(b.inttoptr(p[_P_GETN], get_ty), [])
        with b.if_then(b.icmp_signed(">", got, ir.Constant(I32, 1))):
            b.call(b.inttoptr(p[_P_SETN], set_ty), [ir.Constant(I32, 1)])
        then_block = b.block
    prev = b.phi(I32)
    prev.add_incoming(ir.Constant(I32, 1), entry)
    prev.add_incoming(got, then_block)
    ta, tb = trans(p[_P_TA]), trans(p[_P_TB])
    m, n, k = blasint(m), blasint(n), blasint(p[_P_K])
    lda, ldb, ldc = blasint(p[_P_LDA]), blasint(p[_P_LDB]), blasint(p[_P_LDC])
    one, zero = ir.Constant(fty, 1.0), ir.Constant(fty, 0.0)
    loop, body, done = (fn.append_basic_block(x) for x in ("loop", "body", "done"))
    pre = b.block
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(first, pre)
    b.cbranch(b.icmp_signed("<", i, last), body, done)
    b.position_at_end(body)
    ptrs = [b.bitcast(b.gep(base, [b.mul(i, p[stride])]), fp)
            for base, stride in zip(bases, (_P_SA, _P_SB, _P_SC))]
    b.call(gemm, [ir.Constant(I32, _ROW_MAJOR), ta, tb, m, n, k, one, ptrs[0], lda, ptrs[1],
                  ldb, zero, ptrs[2], ldc])
    i.add_incoming(b.add(i, c64(1)), b.block)
    b.branch(loop)
    b.position_at_end(done)
    with b.if_then(b.icmp_signed(">", prev, ir.Constant(I32, 1))):
        b.call(b.inttoptr(p[_P_SETN], set_ty), [prev])
    b.ret_void()


def _emit_pyobject_entry(module, name: str, data_offset: int) -> None:
    """`name_py(PyObject **arrays, i64, i64)`: calls `name` with the arrays' data pointers."""
    import llvmlite.ir as ir

    from minijax.compiler.codegen.llvm_types import I64
    i8p = ir.IntType(8).as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p.as_pointer(), I64, I64]),
                     name + "_py")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arr = b.alloca(ir.ArrayType(i8p, 4))
    for k in range(4):
        obj = b.load(b.gep(fn.args[0], [ir.Constant(I64, k)], inbounds=True))
        field = b.bitcast(b.gep(obj, [ir.Constant(I64, data_offset)]), i8p.as_pointer())
        b.store(b.load(field), b.gep(arr, [ir.Constant(I64, 0), ir.Constant(I64, k)]))
    b.call(module.get_global(name), [b.bitcast(arr, i8p.as_pointer()), fn.args[1],
                                     fn.args[2]])
    b.ret_void()


class _Entries:
    """The compiled helper: per dtype a ctypes function, a PyObject entry and a builtin.

    Its object code is looked up by `driver_key` first (memory, then MINIJAX_CACHE_DIR), so
    a process with a warm cache directory neither builds nor compiles the IR."""

    def __init__(self, blas: Blas):
        # Lazy: llvmlite loads only when a gemm driver is built (finding BLAS needs none).
        from minijax.backends.cpu import fastcall
        from minijax.backends.cpu.kernel import _DATA_OFFSET, _KernelFn
        from minijax.backends.cpu.runtime import SYMBOL_PLACEHOLDER, get_jit
        symbols = {}
        for dt in ("f32", "f64"):
            name = f"{SYMBOL_PLACEHOLDER}gemm_{dt}"
            py = name + "_py" if _DATA_OFFSET is not None else None
            fast = name + "_fc" if py and fastcall.SUPPORTED else None
            symbols[dt] = {"fn": name, "py": py, "fast": fast}
        wanted = [s for e in symbols.values() for s in e.values() if s]
        jit = get_jit()
        key = driver_key(blas)
        addrs = jit.load_key(key, wanted)
        if addrs is None:
            # Level 0 (no optimizer, fast code generator): a loop of gemm calls gains
            # nothing from -O3, which would cost ~70 ms of LLVM time.
            addrs = jit.compile([(_driver_ir(blas, symbols), 0)], wanted, key=key)
        self.by_dtype = {}
        self._keepalive = []
        for dt, e in symbols.items():
            fn = _KernelFn(addrs[e["fn"]])
            py = _KernelFn(addrs[e["py"]]) if e["py"] else None
            fast = None
            if e["fast"]:
                fast, keep = fastcall.make_builtin(addrs[e["fast"]], f"minijax_gemm_{dt}")
                self._keepalive.append(keep)
            self.by_dtype[np.dtype(np.float32 if dt == "f32" else np.float64)] = (fn, py, fast)


def _driver_ir(blas: Blas, symbols: dict) -> str:
    """The driver module's LLVM IR text, defining the names in `symbols`."""
    import llvmlite.ir as ir

    from minijax.backends.cpu import fastcall
    from minijax.backends.cpu.kernel import _DATA_OFFSET
    from minijax.compiler.codegen.llvm_types import F32, F64, I32, I64
    module = ir.Module(name="minijax_gemm")
    ity = I64 if blas.int_bits == 64 else I32
    for dt, fty in (("f32", F32), ("f64", F64)):
        entry = symbols[dt]
        _emit_gemm(module, entry["fn"], fty, ity)
        if entry["py"]:
            _emit_pyobject_entry(module, entry["fn"], _DATA_OFFSET)
        if entry["fast"] and fastcall.emit_fastcall_entry(
                module, entry["fn"], 4, 1, _DATA_OFFSET) != entry["fast"]:
            raise RuntimeError("gemm driver: unexpected fastcall entry name")
    return str(module)


#: Sources whose code shapes the driver's IR (part of its cache key).
_DRIVER_SOURCES = ("blas.py", "fastcall.py", "kernel.py",
                   os.path.join("..", "..", "compiler", "codegen", "llvm_types.py"))


def driver_key(blas: Blas) -> str:
    """The object-cache key of the gemm driver: a hash of the sources that generate its IR,
    the BLAS integer width, the PyObject layout and the JIT's target (so it is known
    without building the IR)."""
    import hashlib

    from minijax.backends.cpu import fastcall
    from minijax.backends.cpu.kernel import _DATA_OFFSET
    from minijax.backends.cpu.runtime import get_jit
    h = hashlib.sha256(b"minijax-gemm-driver-1\0")
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in _DRIVER_SOURCES:
        with open(os.path.join(here, rel), "rb") as f:
            h.update(f.read())
    h.update(f"{blas.int_bits}|{_DATA_OFFSET}|{fastcall.SUPPORTED}|".encode())
    h.update(get_jit().target_id().encode())
    return h.hexdigest()


_entries_made: dict = {}
_entries_lock = threading.Lock()


def _entries(blas: Blas) -> _Entries:
    # Built once, under a lock: the first gemms of several devices' threads at once (a
    # convolution's, made as it runs) would each build one, and a builtin entry of one
    # no cache keeps would outlive its method table (a crash).
    with _entries_lock:
        made = _entries_made.get(blas)
        if made is None:
            made = _entries_made[blas] = _Entries(blas)
        return made


def _split(batch: int, m: int, n: int, threads: int):
    """(split dim code, its length, pieces) for a gemm run as `threads` independent pieces."""
    if batch >= threads:
        return 0, batch, threads
    if m >= n:
        return 1, m, max(1, min(threads, m))
    return 2, n, max(1, min(threads, n))


class GemmCall:
    """One dot's gemm: `call(a, b, out)` with C-contiguous arrays of the dot's dtype (or,
    with `strides` = (lda, ldb, ldc, a, b and c batch strides) in elements, arrays read and
    written through those strides from their first element).

    Tiny products (below GIL_GEMM_MNK) are called through the builtin entry, the GIL held;
    the others through ctypes, the GIL released, so that several devices' programs (or the
    user's threads) run their gemms at the same time. Small ones (below SMALL_GEMM_MNK) run
    on the calling thread with one BLAS thread. Larger ones are cut into one piece per
    thread of the pool the *calling thread* uses (thread_pool.get_pool(): inside a
    multi-device program that is its device's share), along batch, M or N, each piece a
    single-threaded gemm: the pool's caller takes pieces that no helper has started, so on
    a busy machine this degrades to one thread instead of OpenBLAS's own threads waiting
    on each other; a one-thread pool runs the gemm whole with one BLAS thread. Without a
    thread-count control in the BLAS (or with minijax_dot_split off), larger products are
    one call on BLAS's own threads. With minijax_dot_autotune on, products from
    GIL_GEMM_MNK up choose their piece count from timings of their first calls instead
    (gemm_tuning.py).
    """

    def __init__(self, blas: Blas, form, dtype, threads_single: bool | None = None,
                 strides=None):
        batch, m, n, k, ta, tb = form
        dtype = np.dtype(dtype)
        size = dtype.itemsize
        mnk = batch * m * n * k
        small = mnk < SMALL_GEMM_MNK
        single = small if threads_single is None else threads_single
        if strides is None:
            lda, ldb = (m if ta else k), (k if tb else n)
            strides = (lda, ldb, n, m * k, k * n, m * n)
        # Leading dimensions and per-batch-element strides, in elements: a grouped
        # convolution's groups are interleaved column blocks of one matrix.
        lda, ldb, ldc, sa, sb, sc = strides
        head = [blas.sgemm if dtype == np.float32 else blas.dgemm, blas.set_threads,
                blas.get_threads]
        body = [batch, m, n, k, int(ta), int(tb), lda, ldb, ldc, sa * size, sb * size,
                sc * size]

        def params(one_thread: bool, split: int, length: int, pieces: int):
            steps = {0: (0, 0, 0), 1: ((size if ta else lda * size), 0, ldc * size),
                     2: (0, (ldb * size if tb else size), size)}[split]
            return np.array([*head, int(one_thread), *body, split, length, pieces, *steps],
                            dtype=np.int64)

        can_split = bool(blas.set_threads) and config._values["minijax_dot_split"]
        # From GIL_GEMM_MNK up, measurements choose the piece count (gemm_tuning.py).
        tuned = can_split and threads_single is None and mnk >= GIL_GEMM_MNK and \
            config._values["minijax_dot_autotune"]
        splittable = can_split and (not small or tuned)
        # The whole product in one call: one BLAS thread when small, when asked, or when
        # the calling thread's pool has a single thread (a device's share).
        whole = params(single, 0, batch, 1)
        whole_one = params(True, 0, batch, 1) if splittable else whole
        self.params = whole
        fn, py, fast = _entries(blas).by_dtype[dtype]
        kernel = py if py is not None else fn

        def ptrs_of(prm, a, b, out):
            if py is not None:
                return (ctypes.c_void_p * 4)(id(prm), id(a), id(b), id(out))
            return (ctypes.c_void_p * 4)(prm.ctypes.data, a.ctypes.data, b.ctypes.data,
                                         out.ctypes.data)

        #: Whether `call` keeps the GIL (tiny products through the builtin entry).
        self.holds_gil = fast is not None and mnk < GIL_GEMM_MNK and bool(
            small or threads_single)
        if self.holds_gil:
            def call(a, b, out):
                fast(whole, a, b, out)
        elif not splittable:
            def call(a, b, out):
                kernel(ptrs_of(whole, a, b, out), 0, 1)
        else:
            plans: dict[int, tuple] = {}
            trials: dict[int, gemm_tuning.Trial] = {}
            setn = ctypes.CFUNCTYPE(None, ctypes.c_int)(blas.set_threads)
            getn = ctypes.CFUNCTYPE(ctypes.c_int)(blas.get_threads)
            key = (dtype.str, form, strides)
            label = (f"{f'{batch}x' if batch > 1 else ''}{m}x{n}x{k} "
                     f"{'T' if ta else 'N'}{'T' if tb else 'N'} {dtype.name}")

            def plan(wanted: int):
                split, length, pieces = _split(batch, m, n, wanted)
                got = plans[wanted] = (params(False, split, length, pieces), pieces)
                return got

            def run(pool, wanted, a, b, out):
                prm, pieces = plans.get(wanted) or plan(wanted)
                if pieces == 1:
                    kernel(ptrs_of(whole_one, a, b, out), 0, 1)
                    return
                ptrs = ptrs_of(prm, a, b, out)
                prev = getn()
                if prev > 1:
                    setn(1)
                try:
                    pool.parallel_for(kernel, ptrs, pieces, pieces)
                finally:
                    if prev > 1:
                        setn(prev)

            def trial_of(threads: int) -> gemm_tuning.Trial:
                # Small products: whole or one piece per thread; larger ones: one or two
                # pieces per thread (never whole: a measurement made while another
                # program held a core must not serialize them for good).
                candidates = (1, threads) if small else (threads, 2 * threads)
                got = trials[threads] = gemm_tuning.TUNER.trial(
                    key, threads, label, candidates, config._values["minijax_debug"] >= 2)
                return got

            def call(a, b, out):
                pool = get_pool()
                threads = pool.num_threads
                if threads == 1:
                    kernel(ptrs_of(whole_one, a, b, out), 0, 1)
                elif not tuned:
                    run(pool, threads, a, b, out)
                else:
                    trial = trials.get(threads) or trial_of(threads)
                    gemm_tuning.timed_call(trial, lambda wanted: run(pool, wanted, a, b, out))
        self.call = call


_held = {"count": 0, "saved": 0}
_held_lock = threading.Lock()


@functools.lru_cache(maxsize=4)
def _thread_controls(blas: Blas):
    """(get_num_threads, set_num_threads) of the BLAS as ctypes functions (made once)."""
    return (ctypes.CFUNCTYPE(ctypes.c_int)(blas.get_threads),
            ctypes.CFUNCTYPE(None, ctypes.c_int)(blas.set_threads))


def hold_one_blas_thread() -> None:
    """While held (by any thread), BLAS runs every call on one thread: the devices of a
    multi-device program each have their own share of the cores, and the thread count of
    OpenBLAS is one setting for the whole process (saving and restoring it around each call
    from several threads at once would race). `release_blas_threads` undoes it."""
    blas = find_blas()
    if blas is None or not blas.set_threads or not blas.get_threads:
        return
    get, set_ = _thread_controls(blas)
    with _held_lock:
        if _held["count"] == 0:
            prev = get()
            _held["saved"] = prev
            if prev > 1:
                set_(1)
        _held["count"] += 1


def release_blas_threads() -> None:
    """The last holder gives BLAS back the thread count it had before."""
    blas = find_blas()
    if blas is None or not blas.set_threads or not blas.get_threads:
        return
    with _held_lock:
        _held["count"] -= 1
        if _held["count"] == 0 and _held["saved"] > 1:
            _thread_controls(blas)[1](_held["saved"])


def _dot_options_changed(_value) -> None:
    # Dots are planned when a program is compiled: recompile with the new setting.
    find_blas.cache_clear()
    clear_caches()


config.on_change("minijax_dot_blas", _dot_options_changed)
config.on_change("minijax_dot_split", _dot_options_changed)
config.on_change("minijax_dot_autotune", _dot_options_changed)
