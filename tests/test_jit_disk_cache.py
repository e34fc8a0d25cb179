"""The persistent jit cache (MINIJAX_CACHE_DIR): hits across processes, identical results,
corrupted entries ignored and rewritten, concurrent writers, and the DiskCache itself."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from child_process import run_child_json

import minijax as jax
import minijax.numpy as jnp
from minijax.compiler.hlo.printer import module_to_text
from minijax.compiler.lower import lower_jaxpr_to_module
from minijax.compiler.passes.buffer_assignment import assign_buffers
from minijax.compiler.persistent_cache import DiskCache, get_disk_cache, module_fingerprint
from minijax.compiler.pipeline import CompileOptions, optimize

ROOT = Path(__file__).resolve().parents[1]

# A small training step (grad + SGD update) and a softmax. With FORBID_OPTIMIZE=1 the pass
# pipeline raises, so a run that reports results did not optimize anything.
SCRIPT = r"""
import json, os, sys
import numpy as np
import minijax as jax
import minijax.numpy as jnp
from minijax.compiler import pipeline

if os.environ.get("FORBID_OPTIMIZE"):
    def forbidden(*a, **k):
        raise AssertionError("the pass pipeline ran")
    pipeline.optimize = forbidden

def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1, keepdims=True))
    return -jnp.mean(jnp.sum(logp * y, axis=1))

@jax.jit
def step(params, x, y):
    g = jax.grad(loss)(params, x, y)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, g)]

@jax.jit
def softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    return e / jnp.sum(e, axis=1, keepdims=True)

rng = np.random.RandomState(0)
params = [(rng.randn(12, 8).astype(np.float32), np.zeros(8, np.float32)),
          (rng.randn(8, 3).astype(np.float32), np.zeros(3, np.float32))]
x = rng.randn(5, 12).astype(np.float32)
y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]
out = step(params, x, y)
sm = softmax(x)
stats = {name: {k: getattr(f.cache_stats, k) for k in
                ("disk_hits", "disk_misses", "disk_writes", "compiles")}
         for name, f in (("step", step), ("softmax", softmax))}
values = [np.asarray(a).tobytes().hex() for pair in out for a in pair]
values.append(np.asarray(sm).tobytes().hex())
print(json.dumps({"stats": stats, "values": values}))
"""


def run_script(cache_dir, script=SCRIPT, **env):
    return run_child_json(script, MINIJAX_CACHE_DIR=cache_dir, **env)


def jit_entries(cache_dir):
    return sorted(Path(cache_dir).glob("jit-*.bin"))


def test_second_process_hits_the_disk_cache_with_identical_results(tmp_path):
    first = run_script(tmp_path)
    for name in ("step", "softmax"):
        assert first["stats"][name] == {"disk_hits": 0, "disk_misses": 1, "disk_writes": 1,
                                        "compiles": 1}
    assert len(jit_entries(tmp_path)) == 2
    second = run_script(tmp_path, FORBID_OPTIMIZE="1")
    for name in ("step", "softmax"):
        assert second["stats"][name] == {"disk_hits": 1, "disk_misses": 0, "disk_writes": 0,
                                         "compiles": 1}
    assert second["values"] == first["values"]
    assert not list(tmp_path.glob(".tmp-*"))


def test_corrupted_entry_is_ignored_and_rewritten(tmp_path):
    first = run_script(tmp_path)
    entries = jit_entries(tmp_path)
    original = {p: p.read_bytes() for p in entries}
    damaged = entries[0]
    data = bytearray(original[damaged])
    data[len(data) // 2] ^= 0xFF  # payload no longer matches its checksum
    damaged.write_bytes(bytes(data))
    truncated = entries[1]
    truncated.write_bytes(original[truncated][:40])
    second = run_script(tmp_path)
    assert second["values"] == first["values"]
    hits = sum(s["disk_hits"] for s in second["stats"].values())
    writes = sum(s["disk_writes"] for s in second["stats"].values())
    assert hits == 0 and writes == 2
    assert damaged.read_bytes() != bytes(data) and truncated.stat().st_size > 40
    third = run_script(tmp_path, FORBID_OPTIMIZE="1")
    assert sum(s["disk_hits"] for s in third["stats"].values()) == 2
    assert third["values"] == first["values"]


def test_concurrent_processes_share_one_cache_directory(tmp_path):
    env = dict(os.environ, MINIJAX_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, cwd=str(ROOT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-3000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert all(r["values"] == results[0]["values"] for r in results)
    assert len(jit_entries(tmp_path)) == 2 and not list(tmp_path.glob(".tmp-*"))
    after = run_script(tmp_path, FORBID_OPTIMIZE="1")
    assert after["values"] == results[0]["values"]


# --------------------------------------------------------------------------- in process


def _optimized(f, *args, level=2):
    module, _ = lower_jaxpr_to_module(jax.make_jaxpr(f)(*args), "f")
    fp = module_fingerprint(module, "cpu", (level,))
    return fp, optimize(module, CompileOptions(opt_level=level))


def _softmax_layernorm(x):
    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    m = jnp.mean(x, axis=1, keepdims=True)
    v = jnp.mean(x * x, axis=1, keepdims=True) - m * m
    return e / jnp.sum(e, axis=1, keepdims=True), (x - m) / jnp.sqrt(v + 1e-5)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_round_trip_keeps_the_optimized_module_exactly(tmp_path, level):
    x = np.ones((4, 8), np.float32)
    fp, module = _optimized(_softmax_layernorm, x, level=level)
    cache = DiskCache(str(tmp_path))
    assert cache.store(fp, module)
    loaded = cache.load(fp)
    assert cache.stats.hits == 1 and cache.stats.writes == 1
    assert module_to_text(loaded) == module_to_text(module)
    assert loaded.fusion_log == module.fusion_log
    assert getattr(loaded, "buffer_assignment", None) is None  # recomputed by the caller
    assert assign_buffers(loaded).to_text() == module.buffer_assignment.to_text()
    assert module.buffer_assignment is not None  # storing does not drop it


def test_special_literals_round_trip_bit_exactly(tmp_path):
    values = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38], np.float32)
    values = np.concatenate([values, np.frombuffer(b"\x01\x00\xc0\x7f", np.float32)])
    fp, module = _optimized(lambda v: v * jnp.asarray(values[:1]) + 1.0, values)
    lit = next(i for c in module.computations for i in c.instructions if i.literal is not None)
    lit.literal = values.copy()  # a constant with a NaN payload
    cache = DiskCache(str(tmp_path))
    assert cache.store(fp, module)
    again = next(i for c in cache.load(fp).computations for i in c.instructions
                 if i.literal is not None and i.literal.size == values.size)
    assert again.literal.tobytes() == values.tobytes()


def test_unusable_entries_are_misses(tmp_path):
    x = np.ones((4, 8), np.float32)
    fp, module = _optimized(_softmax_layernorm, x)
    cache = DiskCache(str(tmp_path))
    assert cache.load(fp) is None and cache.stats.misses == 1 and cache.stats.corrupt == 0
    cache.store(fp, module)
    path = Path(cache.path(fp))
    good = path.read_bytes()
    other = "0" * 64
    path.write_bytes(good.replace(fp.encode(), other.encode(), 1))  # another program's entry
    assert cache.load(fp) is None
    # A well-formed entry whose payload names a global outside the IR classes: refused.
    import hashlib
    payload = pickle.dumps(os.getcwd)
    path.write_bytes(b"MINIJAX-JIT-1\n" + fp.encode() + b"\n"
                     + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    assert cache.load(fp) is None
    path.write_bytes(b"")
    assert cache.load(fp) is None
    assert cache.stats.corrupt == 3 and cache.stats.hits == 0


def test_store_failures_are_reported_not_raised(tmp_path):
    x = np.ones((4, 8), np.float32)
    fp, module = _optimized(_softmax_layernorm, x)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = DiskCache(str(blocker / "sub"))
    assert not cache.store(fp, module)
    assert cache.stats.write_errors == 1 and cache.load(fp) is None


@pytest.fixture
def cache_dir_option():
    """Restores the minijax_cache_dir option after a test sets it with config.update."""
    old = jax.config.minijax_cache_dir
    yield
    jax.config.update("minijax_cache_dir", old)


def test_get_disk_cache_follows_the_option(tmp_path, cache_dir_option):
    jax.config.update("minijax_cache_dir", "")
    assert get_disk_cache() is None
    jax.config.update("minijax_cache_dir", str(tmp_path))
    cache = get_disk_cache()
    assert cache is get_disk_cache() and cache.root == str(tmp_path)


def test_in_process_disk_hit_after_clearing_memory_caches(tmp_path, cache_dir_option):
    jax.config.update("minijax_cache_dir", str(tmp_path))
    f = jax.jit(lambda v: jnp.tanh(v) * 3.0 - 1.0)
    x = np.linspace(-2, 2, 10, dtype=np.float32)
    want = np.asarray(f(x))
    assert f.cache_stats.disk_writes == 1
    jax.clear_caches()
    np.testing.assert_array_equal(np.asarray(f(x)), want)
    assert f.cache_stats.disk_hits == 1 and f.cache_stats.compiles == 2
    np.testing.assert_allclose(want, np.tanh(x) * 3 - 1, rtol=1e-5, atol=1e-6)
