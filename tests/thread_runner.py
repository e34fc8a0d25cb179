"""Run a test's work on several threads at once and surface the first failure."""

import threading


def run_in_threads(work, count: int, timeout: float = 120.0) -> None:
    """Call ``work(k)`` for k in range(count), each on its own thread, all at once; re-raise
    the first exception a thread raised, and fail if a thread is still running after
    ``timeout`` seconds."""
    errors = []

    def guarded(k):
        try:
            work(k)
        except BaseException as exc:  # noqa: BLE001  (re-raised on the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
