"""CoalescingPusher: rate limit, coalescing, flush, error isolation."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from workbench.ui.throttle import CoalescingPusher


@pytest.mark.timeout(20)
def test_many_notifies_coalesce_to_at_most_rate() -> None:
    pushes: list[float] = []
    pusher = CoalescingPusher(lambda: pushes.append(time.perf_counter()), max_per_s=4.0)
    try:
        end = time.perf_counter() + 1.6
        n = 0
        while time.perf_counter() < end:
            pusher.notify()
            n += 1
            time.sleep(0.001)
        time.sleep(0.4)
    finally:
        pusher.close()
    assert n > 500
    # 1.6 s at <= 4/s: at most 7 pushes plus the closing flush; at least 4 (it kept pushing).
    assert 4 <= len(pushes) <= 8
    gaps = [b - a for a, b in itertools.pairwise(pushes)]
    assert min(gaps) >= 0.25 - 0.02


@pytest.mark.timeout(10)
def test_flush_pushes_pending_state_synchronously() -> None:
    calls: list[int] = []
    pusher = CoalescingPusher(lambda: calls.append(1), max_per_s=0.5)
    try:
        pusher.notify()
        time.sleep(0.1)  # first push runs at once (no previous push)
        before = len(calls)
        pusher.notify()  # now rate-limited for 2 s
        pusher.flush()
        assert len(calls) == before + 1
        pusher.flush()  # nothing pending: no push
        assert len(calls) == before + 1
    finally:
        pusher.close(flush=False)


@pytest.mark.timeout(10)
def test_push_error_is_reported_and_pusher_survives() -> None:
    errors: list[BaseException] = []
    state = {"n": 0}

    def push() -> None:
        state["n"] += 1
        if state["n"] == 1:
            raise RuntimeError("boom")

    pusher = CoalescingPusher(push, max_per_s=50.0, on_error=errors.append)
    try:
        pusher.notify()
        time.sleep(0.2)
        pusher.notify()
        time.sleep(0.2)
    finally:
        pusher.close()
    assert state["n"] == 2
    assert len(errors) == 1 and str(errors[0]) == "boom"


@pytest.mark.timeout(10)
def test_push_runs_under_the_figure_lock() -> None:
    held: list[bool] = []
    lock = threading.RLock()

    def push() -> None:
        # Another thread must not get the lock while a push runs.
        got: list[bool] = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=0.05)))
        t.start()
        t.join()
        held.append(not got[0])

    pusher = CoalescingPusher(push, max_per_s=10.0, lock=lock)
    try:
        pusher.notify()
        time.sleep(0.3)
    finally:
        pusher.close(flush=False)
    assert held == [True]


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_per_s"):
        CoalescingPusher(lambda: None, max_per_s=0)
