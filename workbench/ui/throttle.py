"""Coalescing, rate-limited pushes to a live figure.

A search can finish hundreds of trials a second (replay) while a browser renders a plotly
figure a few times a second at best. :class:`CoalescingPusher` turns any number of
``notify()`` calls into at most ``max_per_s`` calls of ``push()``: each push draws the
*latest* state, so nothing is lost, only intermediate frames are skipped.

Every mutation of the figure must happen under :attr:`CoalescingPusher.lock` (the figure
lock); ``push`` is always called holding it. An optional ``gate`` is called before each
push, outside the lock: the panel passes one that waits (bounded) until the browser has
drawn the previous push, so pushes never pile up faster than the browser draws them. A
``notify(urgent=True)`` (a person pressed something and waits for its effect) skips the
gate for the next push: the gate's pacing is for a search's stream, and beside two CPU
hogs it held a runtime-axis toggle's redraw back by about a second.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from workbench.core.errors import UsageError

logger = logging.getLogger(__name__)


class CoalescingPusher:
    """Calls ``push()`` on a worker thread, at most ``max_per_s`` times a second.

    ``notify()`` marks the state dirty and returns at once (safe from any thread).
    ``flush()`` pushes now if anything is pending (used at the end of a search).
    ``on_error`` receives exceptions raised by ``push`` (the pusher keeps running).
    """

    def __init__(self, push: Callable[[], None], *, max_per_s: float = 4.0,
                 on_error: Callable[[BaseException], None] | None = None,
                 lock: threading.RLock | None = None,
                 gate: Callable[[], object] | None = None) -> None:
        if max_per_s <= 0:
            raise UsageError(f"max_per_s must be > 0, got {max_per_s}", key="max_per_s",
                             value=max_per_s, expected="> 0")
        self._push = push
        self._min_interval_s = 1.0 / max_per_s
        self._on_error = on_error
        self._gate = gate
        self.lock: threading.RLock = lock or threading.RLock()
        self._cond = threading.Condition()
        self._dirty = False
        self._urgent = False  # the next push answers a person: no gate before it
        self._closed = False
        self._in_flight = False  # the worker took the dirty mark and has not pushed yet
        self._last_push_end = 0.0
        self.push_count = 0
        self.push_times_s: list[float] = []  # wall time of each push, for benchmarks
        self._thread = threading.Thread(target=self._loop, name="wb-figure-pusher", daemon=True)
        self._thread.start()

    @property
    def min_interval_s(self) -> float:
        return self._min_interval_s

    def notify(self, *, urgent: bool = False) -> None:
        """Mark the figure stale; a push follows within ``1 / max_per_s`` seconds
        (``urgent``: without waiting at the gate first)."""
        with self._cond:
            self._dirty = True
            self._urgent = self._urgent or urgent
            self._cond.notify_all()

    def _do_push(self) -> None:
        start = time.perf_counter()
        try:
            with self.lock:
                self._push()
        except Exception as exc:  # a broken push must not kill the pusher thread
            logger.exception("figure push failed")
            if self._on_error is not None:
                self._on_error(exc)
        end = time.perf_counter()
        self.push_count += 1
        self.push_times_s.append(end - start)
        self._last_push_end = end

    def flush(self) -> None:
        """Push immediately (on the caller's thread) if a notify is pending; when the worker
        has already taken the pending mark, wait until its push has ended. Either way every
        notify before this call is drawn when it returns (a worker push that took the mark
        but had not drawn yet let a flush return on the old state)."""
        with self._cond:
            pending = self._dirty
            self._dirty = False
            if not pending:  # bounded: a caller holding the figure lock never hangs
                self._cond.wait_for(lambda: not self._in_flight or self._closed, timeout=10.0)
        if pending:
            self._do_push()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._dirty and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                urgent, self._urgent = self._urgent, False
            if self._gate is not None and not urgent:
                self._gate()  # the browser drew the last push (or the gate timed out)
            # Rate limit: wait until min_interval has passed since the last push ended,
            # letting further notifies coalesce meanwhile.
            wait_s = self._last_push_end + self._min_interval_s - time.perf_counter()
            if wait_s > 0:
                time.sleep(wait_s)
            with self._cond:
                if not self._dirty:
                    continue
                self._dirty = False
                self._in_flight = True
            try:
                self._do_push()
            finally:
                with self._cond:
                    self._in_flight = False
                    self._cond.notify_all()

    def close(self, *, flush: bool = True) -> None:
        """Stop the worker thread (pushing pending state first if ``flush``)."""
        if flush:
            self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=5)
