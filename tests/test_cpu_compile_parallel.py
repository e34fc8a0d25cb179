"""CPU backend compile path: the LLVM module split into parts compiled on several threads,
the multi-part object cache, and what a corrupted cache entry does."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")
import llvmlite.binding as llvm  # noqa: E402
import llvmlite.ir as lir  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from minijax.backends.cpu import CpuBackend  # noqa: E402
from minijax.backends.cpu import runtime as cpu_runtime  # noqa: E402
from minijax.backends.cpu.llvm_parts import COLD, HOT, ModuleText  # noqa: E402
from minijax.backends.cpu.runtime import Jit, get_jit  # noqa: E402
from minijax.compiler.evaluator import evaluate_module  # noqa: E402
from minijax.compiler.hlo.parser import parse_module  # noqa: E402

ADD = "add_f { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }\n"
_UNARY = ["exponential", "tanh", "negate", "sine", "abs", "sqrt", "log", "cosine"]


def many_kernels_text(n: int, dims: tuple[int, ...], scale: float = 1.5) -> str:
    """An entry with n unfused instructions reading the parameter: n distinct kernels
    (different opcodes and constants), plus a reduction over the last axis."""
    t = "f32[" + ",".join(map(str, dims)) + "]"
    rt = "f32[" + ",".join(map(str, dims[:-1])) + "]"
    lines = [f"x = {t} parameter(0)", f"a = {t} abs(x)", "c = f32[] constant(1)",
             f"cb = {t} broadcast(c), dimensions={{}}", f"p = {t} add(a, cb)"]
    outs = []
    for k in range(n):
        lines.append(f"k{k} = f32[] constant({scale + k})")
        lines.append(f"b{k} = {t} broadcast(k{k}), dimensions={{}}")
        lines.append(f"m{k} = {t} multiply(p, b{k})")
        lines.append(f"u{k} = {t} {_UNARY[k % len(_UNARY)]}(m{k})")
        outs.append(f"u{k}")
    lines.append("z = f32[] constant(0)")
    lines.append(f"r = {rt} reduce(p, z), dimensions={{{len(dims) - 1}}}, to_apply=add_f")
    outs.append("r")
    shapes = [t] * n + [rt]
    lines.append(f"ROOT out = ({', '.join(shapes)}) tuple({', '.join(outs)})")
    body = "\n  ".join(lines)
    return f"HloModule many\n{ADD}ENTRY main {{\n  {body}\n}}\n"


def _compile(text, parallelism, monkeypatch):
    monkeypatch.setattr(Jit, "parallelism", staticmethod(lambda: parallelism))
    return CpuBackend().compile(parse_module(text))


# --------------------------------------------------------------------------- splitting


def _toy_module(n, table_users=()):
    """k{k}(x) = k{k}.body(x) = sqrt(x) * (k + 1); the functions named in table_users
    also add a constant global (0.0) to it."""
    m = lir.Module(name="toy")
    f32 = lir.FloatType()
    fnty = lir.FunctionType(f32, [f32])
    sqrt = m.declare_intrinsic("llvm.sqrt", [f32])
    table = None
    if table_users:
        table = lir.GlobalVariable(m, f32, "table")
        table.initializer = lir.Constant(f32, 0.0)
        table.linkage = "internal"
        table.global_constant = True

    def define(name, compute):
        fn = lir.Function(m, fnty, name)
        b = lir.IRBuilder(fn.append_basic_block("entry"))
        value = compute(b, fn.args[0])
        if name in table_users:
            value = b.fadd(value, b.load(table))
        b.ret(value)
        return fn

    for k in range(n):
        body = define(f"k{k}.body", lambda b, x, k=k: b.fmul(b.call(sqrt, [x]),
                                                              lir.Constant(f32, k + 1.0)))
        body.linkage = "internal"
        define(f"k{k}", lambda b, x, body=body: b.call(body, [x]))
    return m


@pytest.mark.parametrize("n,parts", [(1, 4), (2, 2), (5, 2), (7, 3), (3, 8)])
def test_split_defines_every_global_once(n, parts):
    m = _toy_module(n)
    text = ModuleText(m)
    assert text.whole() == str(m)
    assert text.split(parts) == [(str(m), HOT)]  # nothing hot: one -O3 module
    pieces = text.split(parts, hot=[f"k{k}.body" for k in range(n)] + ["llvm.sqrt.f32"])
    assert [level for _, level in pieces] == [HOT] * min(parts, n) + [COLD]
    defined = []
    for piece, level in pieces:
        mod = llvm.parse_assembly(piece)  # each part is a valid module by itself
        mod.verify()
        names = [f.name for f in mod.functions if not f.is_declaration]
        # Loop bodies in the hot parts, the entry points that call them in the cold one.
        assert all(name.endswith(".body") == (level == HOT) for name in names)
        defined += names
    assert sorted(defined) == sorted(f"k{k}{s}" for k in range(n) for s in ("", ".body"))
    # The whole module and the parts compile to the same functions.
    jit = get_jit()
    lib = llvm.JITLibraryBuilder()
    for piece, level in pieces:
        lib.add_object_img(jit.emit_object(piece, level))
    for k in range(n):
        lib.export_symbol(f"k{k}")
    tracker = lib.link(jit.lljit, f"split_test_{n}_{parts}")
    for k in range(n):
        fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(tracker[f"k{k}"])
        assert fn(2.25) == pytest.approx(1.5 * (k + 1))


def test_split_keeps_globals_with_their_users():
    """A constant used by a hot function goes with it; one also used by a cold function
    cannot be split off, so the module stays whole."""
    hot = ["k0.body", "k1.body"]
    pieces = ModuleText(_toy_module(2, table_users={"k1.body"})).split(4, hot=hot)
    owner = [p for p, _ in pieces if '@"table" = internal' in p]
    assert len(owner) == 1 and 'define float @"k1.body"' in owner[0]
    m = _toy_module(2, table_users={"k1.body", "k0"})
    assert ModuleText(m).split(4, hot=hot) == [(str(m), HOT)]


def test_object_cache_payload_round_trip_and_rejects_malformed():
    objs = [b"first object", b"x", b"third" * 100]
    payload = cpu_runtime._pack(objs)
    assert cpu_runtime._unpack(payload) == objs
    for bad in (b"", payload[:-1], payload + b"\x01", (0).to_bytes(8, "little"),
                (1 << 40).to_bytes(8, "little") + b"abc"):
        assert cpu_runtime._unpack(bad) is None


# --------------------------------------------------------------------------- compiling


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 9), dims=st.sampled_from([(1,), (0, 3), (7, 5), (33,), (3, 2, 17)]),
       parallelism=st.sampled_from([2, 3, 8]), seed=st.integers(0, 1000))
def test_parallel_compilation_matches_serial_and_the_evaluator(n, dims, parallelism, seed):
    text = many_kernels_text(n, dims, scale=1.25 + seed / 1000)
    x = np.random.default_rng(seed).normal(size=dims).astype(np.float32)
    want = evaluate_module(parse_module(text), [x])
    with pytest.MonkeyPatch.context() as mp:
        serial = _compile(text, 1, mp)
        parallel = _compile(text, parallelism, mp)
    assert parallel.kernel_count == serial.kernel_count
    for exe in (serial, parallel):
        got = exe.execute([x])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)
    np.testing.assert_array_equal(parallel.execute([x])[0], serial.execute([x])[0])


def test_compile_splits_into_parts(monkeypatch):
    before = dict(get_jit().stats)
    exe = _compile(many_kernels_text(6, (5, 4), scale=3.0), 3, monkeypatch)
    stats = get_jit().stats
    assert stats["compiled"] == before["compiled"] + 1
    assert stats["parts"] == before["parts"] + 4  # 3 hot parts and the entry points
    # llvm_ir() is still one module, with each distinct kernel body once.
    mod = llvm.parse_assembly(exe.llvm_ir().replace(cpu_runtime.SYMBOL_PLACEHOLDER, "t_"))
    mod.verify()
    bodies = sum(1 for f in mod.functions if f.name.endswith(".body"))
    assert bodies == len({k.symbol for k in exe.kernels}) >= 3


def test_emit_object_is_thread_safe_and_deterministic():
    jit = get_jit()
    texts = [ModuleText(_toy_module(k + 2)).whole() for k in range(4)]
    serial = [jit.emit_object(t) for t in texts]
    assert jit.emit_object(texts[0], 0) != serial[0]  # level 0: no optimization
    results: dict = {}

    def work(k):
        for _ in range(3):
            results.setdefault(k, []).append(jit.emit_object(texts[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert results[k] == [serial[k]] * 3


def test_bad_ir_raises_a_clear_error():
    with pytest.raises(RuntimeError, match="parsing error"):
        get_jit().emit_object("define void @f( {")


# --------------------------------------------------------------------------- disk cache


_CACHE_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from minijax.backends.cpu import CpuBackend
    from minijax.backends.cpu.runtime import Jit, get_jit
    from minijax.compiler.hlo.parser import parse_module
    Jit.parallelism = staticmethod(lambda: 3)
    text = sys.stdin.read()
    x = np.linspace(-2, 2, 35).astype(np.float32).reshape(7, 5)
    exe = CpuBackend().compile(parse_module(text))
    s = get_jit().stats
    print(json.dumps({"out": [o.tolist() for o in exe.execute([x])],
                      "compiled": s["compiled"], "hits": s["cache_hits"]}))
""")


def test_multi_part_objects_persist_across_processes(tmp_path):
    import json
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MINIJAX_CACHE_DIR=str(tmp_path),
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    text = many_kernels_text(5, (7, 5), scale=2.5)

    def run():
        out = subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], input=text, env=env,
                             check=True, capture_output=True, text=True, timeout=300)
        return json.loads(out.stdout.strip().splitlines()[-1])

    x = np.linspace(-2, 2, 35).astype(np.float32).reshape(7, 5)
    want = evaluate_module(parse_module(text), [x])
    first = run()
    assert (first["compiled"], first["hits"]) == (1, 0)
    for got, w in zip(first["out"], want, strict=True):
        np.testing.assert_allclose(np.asarray(got, np.float32), w, rtol=2e-5, atol=1e-5)
    [obj] = list(tmp_path.glob("cpu-*.o"))
    second = run()
    assert (second["compiled"], second["hits"]) == (0, 1) and second["out"] == first["out"]
    # A truncated entry (valid header, short payload) and a bit flip are both rejected:
    # the process recompiles, gets the same results, and rewrites the entry.
    data = obj.read_bytes()
    for broken in (data[:len(data) // 2], data[:-10] + bytes([data[-10] ^ 1]) + data[-9:]):
        obj.write_bytes(broken)
        again = run()
        assert (again["compiled"], again["hits"]) == (1, 0) and again["out"] == first["out"]
        assert obj.read_bytes() == data
