"""A new process calling a jitted function whose MINIJAX_CACHE_DIR entry is warm: the
optimized module, the CPU backend's compile plan and the object files are reused without
optimizing, printing the module or running LLVM, and the plan is tied to the exact module
it was made for."""

from __future__ import annotations

import numpy as np
import pytest
from child_process import run_child_json

pytest.importorskip("llvmlite", reason="the CPU backend needs llvmlite")

from minijax.compiler.persistent_cache import DiskCache  # noqa: E402

# SCALE picks the program; TRACE_WORK records which compile stages ran.
SCRIPT = r"""
import json, os, sys
import numpy as np
import minijax as jax
import minijax.numpy as jnp
from minijax.backends.cpu.runtime import get_jit
from minijax.compiler.hlo import printer

printed = []
_print = printer.module_to_text
printer.module_to_text = lambda m: printed.append(m.name) or _print(m)
scale = float(os.environ.get("SCALE", "2"))

@jax.jit
def step(w, x):
    def loss(w):
        h = jnp.tanh(x @ w)
        return jnp.sum(jnp.exp(h * scale) / jnp.sum(jnp.exp(h), axis=1, keepdims=True))
    return w - 0.1 * jax.grad(loss)(w)

rng = np.random.RandomState(0)
w = rng.randn(9, 7).astype(np.float32)
x = rng.randn(5, 9).astype(np.float32)
out = np.asarray(step(w, x))
s = get_jit().stats
print(json.dumps({"out": out.tolist(), "printed": printed, "compiled": s["compiled"],
                  "obj_hits": s["cache_hits"], "disk_hits": step.cache_stats.disk_hits}))
"""


def run(cache_dir, **env):
    return run_child_json(SCRIPT, MINIJAX_CACHE_DIR=cache_dir, **env)


def reference(scale):
    rng = np.random.RandomState(0)
    w = rng.randn(9, 7).astype(np.float32)
    x = rng.randn(5, 9).astype(np.float32)
    h = np.tanh(x @ w)
    e, ez = np.exp(h * scale), np.exp(h)
    z = ez.sum(1, keepdims=True)
    # d/dh of sum(e / z): scale*e/z - ez * sum(e, 1) / z^2
    dh = scale * e / z - ez * e.sum(1, keepdims=True) / z ** 2
    return w - 0.1 * (x.T @ (dh * (1 - h * h)))


def test_warm_cache_replays_without_printing_or_llvm(tmp_path):
    first = run(tmp_path)
    assert first["compiled"] >= 1 and first["disk_hits"] == 0
    np.testing.assert_allclose(first["out"], reference(2.0), rtol=2e-4, atol=2e-5)
    second = run(tmp_path)
    assert second["disk_hits"] == 1 and second["compiled"] == 0 and second["obj_hits"] >= 1
    assert second["printed"] == []   # the plan is keyed on the entry's digest
    assert second["out"] == first["out"]


def test_plan_follows_the_module_not_the_fingerprint(tmp_path):
    """An entry replaced by another program under the same fingerprint (a stale entry
    after a compiler change looks like this) gets its own plan, never the old one."""
    first = run(tmp_path, SCALE="2")
    other_dir = tmp_path / "other"
    run(other_dir, SCALE="3")
    [mine] = list(tmp_path.glob("jit-*.bin"))
    [theirs] = list(other_dir.glob("jit-*.bin"))
    cache, other = DiskCache(str(tmp_path)), DiskCache(str(other_dir))
    fp = mine.read_bytes().split(b"\n")[1].decode()
    other_fp = theirs.read_bytes().split(b"\n")[1].decode()
    module = other.load(other_fp)
    assert module is not None and cache.store(fp, module)  # same key, other program
    swapped = run(tmp_path, SCALE="2")
    assert swapped["disk_hits"] == 1
    np.testing.assert_allclose(swapped["out"], reference(3.0), rtol=2e-4, atol=2e-5)
    assert swapped["out"] != first["out"]


def test_digest_names_the_stored_payload(tmp_path):
    from minijax.compiler.hlo.parser import parse_module
    text = ("HloModule d\nENTRY main {\n  x = f32[3] parameter(0)\n"
            "  e = f32[3] exponential(x)\n  ROOT t = (f32[3]) tuple(e)\n}\n")
    cache = DiskCache(str(tmp_path))
    a, b = parse_module(text), parse_module(text.replace("exponential", "negate"))
    assert cache.store("fa", a) and cache.store("fb", b)
    assert a.cache_digest != b.cache_digest
    assert cache.load("fa").cache_digest == a.cache_digest
    assert cache.load("fb").cache_digest == b.cache_digest
