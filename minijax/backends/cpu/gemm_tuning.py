"""How many pieces a gemm is cut into, chosen per shape from measurements of its own calls.

A gemm of the CPU backend (blas.GemmCall) can run whole on the calling thread or cut along
batch, M or N into pieces that the thread pool runs at once, each piece a single-threaded
BLAS call. Which is fastest depends on the shape, the BLAS, the cores and what else runs on
them, so instead of fixed size thresholds the first calls of each shape try the candidates
in turn, each call timed (the call does its real work: nothing is computed twice), and
after TRIAL_ROUNDS calls of every candidate the fastest (the best of its calls: noise only
adds time) is used from then on by every gemm of that shape and pool size in the process.
A split has to win by SPLIT_MARGIN to be chosen over fewer pieces: threads that gain
nothing are better left to the rest of the program.

This is opt-in (minijax_dot_autotune=True, MINIJAX_DOT_AUTOTUNE=1) because the piece
count changes the last bits of results: OpenBLAS computes a sub-matrix with other kernels
(tails, its small-matrix path) than the whole product, so a split made from timings would
make the same program give slightly different results from run to run. By default gemms
keep the fixed rule, which depends only on the shape and the pool size: whole below
blas.SMALL_GEMM_MNK, else one piece per pool thread. BLAS's own threads are no candidate
either (they too round differently; minijax_dot_split=False asks for them). MINIJAX_DEBUG=2
prints each decision with the times it was made from.
"""

from __future__ import annotations

import sys
import threading
import time

#: Timed calls of each candidate before a decision.
TRIAL_ROUNDS = 3
#: A candidate with more pieces is chosen only when it is at least this much faster.
SPLIT_MARGIN = 0.05


class Trial:
    """The measurements of one (gemm shape, pool size): candidate piece counts are tried in
    turn until each has TRIAL_ROUNDS timings, then `choice` is the fastest."""

    def __init__(self, label: str, candidates: tuple[int, ...], debug: bool = False):
        self.label = label
        self.candidates = tuple(sorted(set(candidates)))
        self.times: dict[int, list[float]] = {c: [] for c in self.candidates}
        self.choice: int | None = self.candidates[0] if len(self.candidates) == 1 else None
        self._turn = 0
        self._lock = threading.Lock()
        self._debug = debug

    def next_candidate(self) -> int:
        """The piece count the next call should try (the decision once made)."""
        with self._lock:
            if self.choice is not None:
                return self.choice
            pieces = self.candidates[self._turn % len(self.candidates)]
            self._turn += 1
            return pieces

    def record(self, pieces: int, seconds: float) -> None:
        """One call's time with `pieces` pieces; decides once every candidate has its
        rounds."""
        with self._lock:
            if self.choice is not None:
                return
            self.times[pieces].append(seconds)
            if all(len(t) >= TRIAL_ROUNDS for t in self.times.values()):
                self.choice = self._decide()

    def _decide(self) -> int:
        best = {c: min(t) for c, t in self.times.items()}
        choice = self.candidates[0]
        for c in self.candidates[1:]:
            if best[c] < best[choice] * (1.0 - SPLIT_MARGIN):
                choice = c
        if self._debug:
            tried = ", ".join(f"{c} piece{'s' if c > 1 else ''} {best[c] * 1e6:.1f} us"
                              for c in self.candidates)
            print(f"[minijax cpu] gemm {self.label}: {tried} -> {choice}", file=sys.stderr)
        return choice


class GemmTuner:
    """The process's trials, by (gemm key, pool size)."""

    def __init__(self):
        self._trials: dict = {}
        self._lock = threading.Lock()

    def trial(self, key, threads: int, label: str, candidates, debug: bool = False) -> Trial:
        """The trial of `key` on a pool of `threads` threads (made on first use)."""
        found = self._trials.get((key, threads))
        if found is not None:
            return found
        with self._lock:
            found = self._trials.get((key, threads))
            if found is None:
                found = self._trials[(key, threads)] = Trial(label, candidates, debug)
            return found

    def clear(self) -> None:
        """Forget every measurement (the next calls measure again)."""
        with self._lock:
            self._trials.clear()


TUNER = GemmTuner()


def timed_call(trial: Trial, run) -> None:
    """Runs `run(pieces)` with the trial's next candidate, timing it while undecided."""
    pieces = trial.next_candidate()
    if trial.choice is not None:
        run(pieces)
        return
    t0 = time.perf_counter()
    run(pieces)
    trial.record(pieces, time.perf_counter() - t0)
