"""Thread safety of jit: compile races, concurrent calls of one executable, the thread pool.

Every test starts its threads at a barrier so that they really race, collects the results
and exceptions of every thread, and compares with NumPy.
"""

import threading

import numpy as np
import pytest

import minijax as jax
from minijax import lax
from minijax.backends.cpu import PARALLEL_THRESHOLD

BACKENDS = ("interpreter", "cpu")


def _race(n_threads, work):
    """Run work(k) in n_threads threads started together; return the results in order."""
    barrier = threading.Barrier(n_threads)
    results = [None] * n_threads
    errors = []

    def run(k):
        try:
            barrier.wait()
            results[k] = work(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def _fused(x, y):
    return lax.reduce_sum(lax.add(x, lax.mul(y, y)), (0,)), lax.tanh(x)


def _reference(x, y):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    return (x64 + y64 * y64).sum(0), np.tanh(x64)


def _check(got, x, y):
    want = _reference(x, y)
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_race_on_one_signature_compiles_once(backend):
    f = jax.jit(_fused, backend=backend)
    rng = np.random.default_rng(0)
    inputs = [(rng.standard_normal((6, 5)).astype(np.float32),
               rng.standard_normal((6, 5)).astype(np.float32)) for _ in range(8)]
    results = _race(8, lambda k: f(*inputs[k]))
    for got, (x, y) in zip(results, inputs, strict=True):
        _check(got, x, y)
    assert f._cache_size() == 1
    assert f.cache_stats.compiles == 1 and f.cache_stats.misses == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_new_shapes_racing_to_compile_give_one_entry_per_signature(backend):
    f = jax.jit(lambda x, y: _fused(x, y), backend=backend)  # a fresh cache (jit caches on f)
    shapes = [(3, 4), (5,), (1, 7), (2, 3, 2)]
    rng = np.random.default_rng(1)
    n = 12
    inputs = [tuple(rng.standard_normal(shapes[k % 4]).astype(np.float32) for _ in range(2))
              for k in range(n)]

    def work(k):
        return [f(*inputs[k]) for _ in range(3)]
    results = _race(n, work)
    for runs, (x, y) in zip(results, inputs, strict=True):
        for got in runs:
            _check(got, x, y)
    assert f._cache_size() == len(shapes)
    assert f.cache_stats.compiles == len(shapes)
    assert f.cache_stats.hits + f.cache_stats.misses <= 3 * n
    # A dtype change in a race is one more signature, not a corrupted entry.
    halves = [np.linspace(-1, 1, 6, dtype=np.float16).reshape(2, 3) + k for k in range(4)]
    outs = _race(4, lambda k: f(halves[k], halves[k]))
    for got, a in zip(outs, halves, strict=True):
        assert np.asarray(got[0]).dtype == np.float16
        np.testing.assert_allclose(np.asarray(got[0], np.float64),
                                   (a.astype(np.float64) * (1 + a)).sum(0), rtol=5e-3)
    assert f._cache_size() == len(shapes) + 1


def test_threads_calling_one_cpu_executable_at_once():
    f = jax.jit(lambda x, y: _fused(x, y), backend="cpu")  # a fresh cache (jit caches on f)
    rng = np.random.default_rng(2)
    big = (PARALLEL_THRESHOLD // 509 + 1, 509)  # kernels split across the thread pool
    inputs = [tuple(rng.standard_normal(big).astype(np.float32) for _ in range(2))
              for _ in range(6)]
    f(*inputs[0])  # compiled before the race: every thread runs the same executable
    small = [tuple(rng.standard_normal(9).astype(np.float32) for _ in range(2))
             for _ in range(6)]
    f(*small[0])

    def work(k):
        out = []
        for _ in range(5):
            out.append((f(*inputs[k]), f(*small[k])))
        return out
    results = _race(6, work)
    for k, runs in enumerate(results):
        for big_out, small_out in runs:
            _check(big_out, *inputs[k])
            _check(small_out, *small[k])
    assert f.cache_stats.compiles == 2


def test_different_functions_compiling_concurrently_on_cpu():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 33)).astype(np.float32)
    fns = [
        (lambda v: lax.exp(lax.neg(v)), lambda v: np.exp(-v)),
        (lambda v: lax.reduce_max(v, (1,)), lambda v: v.max(1)),
        (lambda v: lax.transpose(lax.mul(v, v), (1, 0)), lambda v: (v * v).T),
        (lambda v: lax.cumsum(v, 1), lambda v: np.cumsum(v, 1)),
        (lambda v: lax.sort(v, dimension=1), lambda v: np.sort(v, 1)),
        (lambda v: lax.pad(v, np.float32(0), [(1, 1, 0), (0, 2, 1)]),
         lambda v: np.pad(_interior(v), ((1, 1), (0, 2)))),
    ]
    jitted = [jax.jit(fn, backend="cpu") for fn, _ in fns]
    results = _race(len(fns), lambda k: jitted[k](x))
    for (_, ref), got in zip(fns, results, strict=True):
        np.testing.assert_allclose(np.asarray(got), ref(x.astype(np.float64)), rtol=1e-5,
                                   atol=1e-5)


def _interior(v):
    out = np.zeros((v.shape[0], 2 * v.shape[1] - 1), v.dtype)
    out[:, ::2] = v
    return out


def test_two_jit_objects_of_one_program_race_and_share_results():
    x = np.linspace(-2, 2, 64, dtype=np.float32)

    def work(k):
        g = jax.jit(lambda v: lax.logistic(lax.mul(v, np.float32(3))), backend="cpu")
        return np.asarray(g(x))
    results = _race(6, work)
    want = 1 / (1 + np.exp(-3 * x.astype(np.float64)))
    for got in results:
        np.testing.assert_allclose(got, want, rtol=1e-5)
