"""Gemm piece counts chosen from measurements (backends/cpu/gemm_tuning.py).

The choice must follow the timings (the fastest candidate; a split only when it wins by the
margin), every candidate must compute the product, and the option stays off by default
(a split changes the last bits of results, so by default they must not depend on timings).
"""

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minijax.backends.cpu import blas as cpu_blas
from minijax.backends.cpu import gemm_tuning
from minijax.backends.cpu.thread_pool import ThreadPool, set_device_share
from minijax.config import config

BLAS = cpu_blas.find_blas()
needs_blas = pytest.mark.skipif(
    BLAS is None or not BLAS.set_threads,
    reason="no BLAS with a thread-count control in NumPy's libraries: gemms run whole")


@contextlib.contextmanager
def tuning_on():
    saved = config._values["minijax_dot_autotune"]
    config.update("minijax_dot_autotune", True)
    gemm_tuning.TUNER.clear()
    try:
        yield
    finally:
        config.update("minijax_dot_autotune", saved)


@pytest.fixture
def autotune():
    with tuning_on():
        yield


def _record_all(trial, timings):
    """Feeds the trial's requests with the given time per piece count until it decides."""
    asked = []
    while trial.choice is None:
        pieces = trial.next_candidate()
        asked.append(pieces)
        trial.record(pieces, timings[pieces])
    return asked


def test_trial_takes_turns_then_keeps_the_fastest():
    trial = gemm_tuning.Trial("t", (4, 2, 1))
    asked = _record_all(trial, {1: 3e-3, 2: 1.6e-3, 4: 1.9e-3})
    assert asked == [1, 2, 4] * gemm_tuning.TRIAL_ROUNDS
    assert trial.choice == 2
    assert [trial.next_candidate() for _ in range(5)] == [2] * 5


def test_a_split_must_win_by_the_margin():
    slower_than_margin = 1e-3 * (1 - gemm_tuning.SPLIT_MARGIN / 2)
    trial = gemm_tuning.Trial("t", (1, 2))
    _record_all(trial, {1: 1e-3, 2: slower_than_margin})
    assert trial.choice == 1
    trial = gemm_tuning.Trial("t", (1, 2))
    _record_all(trial, {1: 1e-3, 2: 0.5e-3})
    assert trial.choice == 2


def test_best_time_of_each_candidate_decides():
    # One slow outlier (another program took the core) must not sink a candidate.
    trial = gemm_tuning.Trial("t", (1, 2))
    times = {1: iter([1e-3, 1e-3, 1e-3]), 2: iter([9e-3, 0.5e-3, 0.6e-3])}
    while trial.choice is None:
        pieces = trial.next_candidate()
        trial.record(pieces, next(times[pieces]))
    assert trial.choice == 2


def test_single_candidate_needs_no_measurement():
    trial = gemm_tuning.Trial("t", (2, 2))
    assert trial.choice == 2 and trial.next_candidate() == 2


def test_tuner_shares_trials_by_key_and_pool_size():
    tuner = gemm_tuning.GemmTuner()
    a = tuner.trial("k", 2, "t", (1, 2))
    assert tuner.trial("k", 2, "t", (1, 2)) is a
    assert tuner.trial("k", 4, "t", (1, 4)) is not a
    tuner.clear()
    assert tuner.trial("k", 2, "t", (1, 2)) is not a


def _operands(rng, form):
    batch, m, n, k, ta, tb = form
    lhs = (k, m) if ta else (m, k)
    rhs = (n, k) if tb else (k, n)
    if batch > 1:
        lhs, rhs = (batch, *lhs), (batch, *rhs)
    a = rng.standard_normal(lhs).astype(np.float32)
    b = rng.standard_normal(rhs).astype(np.float32)
    return a, b


def _reference(a, b, form):
    batch, m, n, k, ta, tb = form
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if ta:
        a64 = np.swapaxes(a64, -1, -2)
    if tb:
        b64 = np.swapaxes(b64, -1, -2)
    return (a64 @ b64).reshape(batch, m, n) if batch > 1 else a64 @ b64


@needs_blas
@settings(max_examples=12, deadline=None)
@given(batch=st.sampled_from([1, 1, 3]), m=st.integers(8, 96), n=st.integers(8, 96),
       k=st.integers(24, 200), ta=st.booleans(), tb=st.booleans())
def test_every_candidate_computes_the_product(batch, m, n, k, ta, tb):
    form = (batch, m, n, k, ta, tb)
    if batch * m * n * k < cpu_blas.GIL_GEMM_MNK:
        k = -(-cpu_blas.GIL_GEMM_MNK // (batch * m * n))
        form = (batch, m, n, k, ta, tb)
    a, b = _operands(np.random.default_rng(m * n + k), form)
    shape = (batch, m, n) if batch > 1 else (m, n)
    with tuning_on():
        call = cpu_blas.GemmCall(BLAS, form, np.float32)
        outs = _calls(call, a, b, shape)
        trials = list(gemm_tuning.TUNER._trials.values())
    assert len(trials) == 1 and trials[0].choice is not None
    assert len({len(t) for t in trials[0].times.values()}) == 1   # every candidate ran
    expected = _reference(a, b, form)
    for out in outs:
        np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)


def _calls(call, a, b, shape):
    """Enough calls on a 2-thread pool to run every candidate and then the choice."""
    set_device_share(ThreadPool(2))
    try:
        outs = []
        for _ in range(3 * gemm_tuning.TRIAL_ROUNDS + 2):
            out = np.full(shape, np.nan, np.float32)
            call.call(a, b, out)
            outs.append(out)
    finally:
        set_device_share(None)
    return outs


def _first_call(form, threads: int, seed: int):
    """One call of a fresh tuner's gemm `form` on a pool of `threads`: (a, b, out)."""
    a, b = _operands(np.random.default_rng(seed), form)
    gemm_tuning.TUNER.clear()
    set_device_share(ThreadPool(threads))
    try:
        out = np.empty((form[1], form[2]), np.float32)
        cpu_blas.GemmCall(BLAS, form, np.float32).call(a, b, out)
    finally:
        set_device_share(None)
    return a, b, out


@needs_blas
def test_large_gemms_are_always_split_on_a_pool_of_several_threads(autotune):
    form = (1, 256, 256, 128, False, False)
    assert 256 * 256 * 128 >= cpu_blas.SMALL_GEMM_MNK
    _first_call(form, 2, 0)
    (trial,) = gemm_tuning.TUNER._trials.values()
    assert trial.candidates == (2, 4)


@needs_blas
def test_autotune_is_off_by_default_and_keeps_the_fixed_rule():
    assert config._values["minijax_dot_autotune"] is False
    form = (1, 64, 64, 64, False, False)       # between GIL_GEMM_MNK and SMALL_GEMM_MNK
    a, b, out = _first_call(form, 2, 1)
    assert not gemm_tuning.TUNER._trials
    np.testing.assert_allclose(out, _reference(a, b, form), rtol=2e-4, atol=2e-4)


@needs_blas
def test_one_thread_pool_runs_whole_without_a_trial(autotune):
    form = (1, 64, 64, 64, False, False)
    a, b, out = _first_call(form, 1, 2)
    assert not gemm_tuning.TUNER._trials
    np.testing.assert_allclose(out, _reference(a, b, form), rtol=2e-4, atol=2e-4)
