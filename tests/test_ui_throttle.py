"""CoalescingPusher: rate limit, coalescing, flush, error isolation.

On an injected clock (the throttle module's ``time`` replaced by :class:`FakeClock`): time
moves only when the test moves it, the pusher's rate-limit sleep blocks until it has, and
the test hands off to the pusher thread at each step instead of sleeping, so push times are
exact and nothing depends on how busy the machine is.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator

import pytest

from workbench.ui import throttle
from workbench.ui.throttle import CoalescingPusher

START_S = 1000.0  # a perf_counter-like origin: the first push is due at once


class FakeClock:
    """``perf_counter`` and ``sleep`` over a time that only :meth:`advance` moves."""

    def __init__(self, now: float = START_S) -> None:
        self.now = now
        self.deadlines: list[float] = []  # of the threads sleeping now
        self._cond = threading.Condition()

    def perf_counter(self) -> float:
        with self._cond:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._cond:
            deadline = self.now + seconds
            self.deadlines.append(deadline)
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.now >= deadline, timeout=10)
            self.deadlines.remove(deadline)
            self._cond.notify_all()

    def advance(self, seconds: float) -> bool:
        """Move time on; True when a sleeper's deadline came (it then runs)."""
        with self._cond:
            self.now += seconds
            woke = any(d <= self.now for d in self.deadlines)
            self._cond.notify_all()
            return woke

    def wait_for_sleeper(self, timeout_s: float = 10.0) -> None:
        """Block until some thread sleeps on this clock (the pusher waits out its rate)."""
        with self._cond:
            assert self._cond.wait_for(lambda: bool(self.deadlines), timeout=timeout_s), \
                "the pusher never slept"


class Pushes:
    """Push calls, recorded with the clock's time; waitable from the test thread."""

    def __init__(self, clock: FakeClock, action: Callable[[], None] | None = None) -> None:
        self.clock = clock
        self.times: list[float] = []
        self.action = action
        self._cond = threading.Condition()

    def __call__(self) -> None:
        if self.action is not None:
            self.action()
        with self._cond:
            self.times.append(self.clock.now)
            self._cond.notify_all()

    def wait_for(self, count: int, timeout_s: float = 10.0) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.times) >= count, timeout=timeout_s), \
                f"{len(self.times)} pushes, expected {count}"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fake = FakeClock()
    monkeypatch.setattr(throttle, "time", fake)
    yield fake


@pytest.mark.timeout(20)
def test_many_notifies_coalesce_to_at_most_rate(clock: FakeClock) -> None:
    pushes = Pushes(clock)
    pusher = CoalescingPusher(pushes, max_per_s=4.0)
    try:
        pusher.notify()
        pushes.wait_for(1)  # the first push is due at once
        pusher.notify()
        notifies = 2
        clock.wait_for_sleeper()  # the pusher waits out its interval
        for _ in range(1600):  # 1.6 s of notifies, one a millisecond
            before = len(pushes.times)
            if clock.advance(0.001):  # the pusher's rate-limit wait is over: it pushes
                pushes.wait_for(before + 1)
                pusher.notify()
                notifies += 1
                clock.wait_for_sleeper()  # and waits out the next interval
            pusher.notify()
            notifies += 1
        pusher.flush()  # what close() does first: the pending state, on this thread
        clock.advance(1.0)  # the sleeping pusher wakes to nothing pending
    finally:
        pusher.close()
    # one push at once, then one every 0.25 s of the 1.6 s, then the flush
    assert notifies > 1600
    assert len(pushes.times) == 8
    gaps = [b - a for a, b in itertools.pairwise(pushes.times[:-1])]
    assert all(0.25 - 1e-9 <= gap <= 0.25 + 0.001 + 1e-9 for gap in gaps), gaps
    assert pushes.times[-1] == pytest.approx(START_S + 1.6)  # the flush


@pytest.mark.timeout(10)
def test_flush_pushes_pending_state_synchronously(clock: FakeClock) -> None:
    pushes = Pushes(clock)
    pusher = CoalescingPusher(pushes, max_per_s=0.5)
    try:
        pusher.notify()
        pushes.wait_for(1)  # the first push runs at once (no previous push)
        pusher.notify()  # now rate-limited for 2 s
        clock.wait_for_sleeper()
        pusher.flush()
        assert len(pushes.times) == 2 and pushes.times[1] == START_S  # on this thread, now
        pusher.flush()  # nothing pending: no push
        assert len(pushes.times) == 2
        clock.advance(2.0)  # the pusher wakes, finds nothing pending
    finally:
        pusher.close(flush=False)
    assert len(pushes.times) == 2


@pytest.mark.timeout(20)
def test_flush_waits_for_a_push_the_worker_already_took(clock: FakeClock) -> None:
    """CI saw a panel read its progress before the push that drew it: the worker had taken
    the pending mark, so flush found nothing pending and returned on the old state."""
    started, release = threading.Event(), threading.Event()
    events: list[str] = []

    def blocked() -> None:
        started.set()
        assert release.wait(10)

    pushes = Pushes(clock, blocked)
    pusher = CoalescingPusher(pushes, max_per_s=4.0)
    try:
        pusher.notify()
        assert started.wait(10)  # the worker's push is under way, the mark taken
        flusher = threading.Thread(target=lambda: (pusher.flush(), events.append("flushed")))
        flusher.start()
        flusher.join(0.3)  # the old flush returned here at once
        events.append("released")
        release.set()
        flusher.join(10)
        assert not flusher.is_alive()
    finally:
        pusher.close(flush=False)
    assert events == ["released", "flushed"]
    assert len(pushes.times) == 1  # it waited for the worker's push, it did not push twice


@pytest.mark.timeout(10)
def test_push_error_is_reported_and_pusher_survives(clock: FakeClock) -> None:
    errors: list[BaseException] = []
    failed = threading.Event()
    calls = {"n": 0}

    def first_fails() -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")

    def on_error(exc: BaseException) -> None:
        errors.append(exc)
        failed.set()

    pushes = Pushes(clock, first_fails)
    pusher = CoalescingPusher(pushes, max_per_s=50.0, on_error=on_error)
    try:
        pusher.notify()
        assert failed.wait(10)
        pusher.notify()
        clock.wait_for_sleeper()  # the pusher survived and waits out 1 / 50 s
        assert clock.advance(0.02)
        pushes.wait_for(1)
    finally:
        pusher.close()
    assert calls["n"] == 2 and pushes.times == [START_S + 0.02]
    assert len(errors) == 1 and str(errors[0]) == "boom"


@pytest.mark.timeout(10)
def test_push_runs_under_the_figure_lock(clock: FakeClock) -> None:
    held: list[bool] = []
    lock = threading.RLock()

    def try_the_lock_elsewhere() -> None:
        # Another thread must not get the lock while a push runs.
        got: list[bool] = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=0.05)))
        t.start()
        t.join()
        held.append(not got[0])

    pushes = Pushes(clock, try_the_lock_elsewhere)
    pusher = CoalescingPusher(pushes, max_per_s=10.0, lock=lock)
    try:
        pusher.notify()
        pushes.wait_for(1)
    finally:
        pusher.close(flush=False)
    assert held == [True]


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_per_s"):
        CoalescingPusher(lambda: None, max_per_s=0)


@pytest.mark.timeout(10)
def test_an_urgent_notify_skips_the_gate_once(clock: FakeClock) -> None:
    """The gate paces a search's stream of pushes for the browser; a push that answers a
    person's press (the runtime-axis toggle) goes out without waiting there."""
    pushes = Pushes(clock)
    gated: list[float] = []
    pusher = CoalescingPusher(pushes, max_per_s=4.0, gate=lambda: gated.append(clock.now))
    try:
        pusher.notify()
        pushes.wait_for(1)
        assert gated == [START_S]  # a stream's push waits at the gate
        clock.advance(1.0)  # past the rate limit
        pusher.notify(urgent=True)
        pushes.wait_for(2)
        assert gated == [START_S] and pushes.times[1] == START_S + 1.0
        clock.advance(1.0)
        pusher.notify()  # the next one is paced again
        pushes.wait_for(3)
        assert gated == [START_S, START_S + 2.0]
    finally:
        pusher.close(flush=False)
