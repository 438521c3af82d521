"""Typed events and a small thread-safe event bus.

The orchestrator and the agent publish these frozen records; the panel, the CLI progress
bar and tests subscribe. Publishing never prints and never lets a subscriber break the
publisher: a subscriber that raises is logged and the remaining subscribers still run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.core.records import Candidate, TrialResult

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrialStarted:
    """A candidate was handed to the runner; ``index`` counts evaluations in this run."""

    candidate: Candidate
    index: int


@dataclass(frozen=True)
class TrialFinished:
    """A result exists and has already been written to the store."""

    result: TrialResult
    index: int


@dataclass(frozen=True)
class BestImproved:
    """A new best for ``result.shape``; ``previous_us`` is None for the first valid time."""

    result: TrialResult
    previous_us: float | None
    speedup_vs_baseline: float | None


@dataclass(frozen=True)
class PhaseChanged:
    """The search (or agent) moved to another phase, e.g. "searching shape decode"."""

    phase: str
    detail: str = ""


@dataclass(frozen=True)
class SearchFinished:
    """The loop ended; ``reason`` is e.g. "budget", "patience", "exhausted", "stopped"."""

    reason: str
    evaluated: int
    best: Mapping[str, TrialResult] = field(default_factory=dict)


@dataclass(frozen=True)
class ErrorEvent:
    """An unexpected error ended the loop; ``detail`` holds the traceback text."""

    message: str
    detail: str = ""


@dataclass(frozen=True)
class IterationStarted:
    """The agent started plan -> generate -> review -> tune iteration ``iteration``."""

    iteration: int
    detail: str = ""


@dataclass(frozen=True)
class IterationFinished:
    """The agent finished iteration ``iteration`` with this best time and speedup."""

    iteration: int
    best_us: float | None
    speedup: float | None
    detail: str = ""


@dataclass(frozen=True)
class TuneStarted:
    """A tune call began (a script's, the panel's or the CLI's): what it searches.
    ``budget_evaluations`` None: the whole space."""

    shape: str
    dtype: str
    strategy: str
    budget_evaluations: int | None
    template_version: str


@dataclass(frozen=True)
class TuneEnded:
    """A tune call ended: why (the report's reason), or the error that ended it."""

    shape: str
    dtype: str
    template_version: str
    reason: str
    error: str = ""


@dataclass(frozen=True)
class TemplateAdopted:
    """A session tunes another template from now on (a proposal, a script's
    ``adopt_template``): its version id and parameter names, for views to follow."""

    template_version: str
    param_names: tuple[str, ...]
    origin: str = ""


Event = (TrialStarted | TrialFinished | BestImproved | PhaseChanged | SearchFinished
         | ErrorEvent | IterationStarted | IterationFinished | TuneStarted | TuneEnded
         | TemplateAdopted)
Subscriber = Callable[[Any], None]


class EventBus:
    """Fan-out of events to subscribers; safe to use from several threads.

    ``subscribe`` returns a callable that removes the subscription. Callbacks run on the
    publishing thread, in subscription order, outside the bus's lock (so a callback may
    itself subscribe, unsubscribe or publish).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[tuple[int, Subscriber]] = []
        self._next_id = 0

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Register ``callback``; call the returned handle to unsubscribe (idempotent)."""
        with self._lock:
            token = self._next_id
            self._next_id += 1
            self._subscribers.append((token, callback))

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [(t, cb) for t, cb in self._subscribers if t != token]

        return unsubscribe

    def publish(self, event: object) -> None:
        """Deliver ``event`` to every subscriber; a raising subscriber is logged and skipped.

        Any frozen event record may travel: the core ones (:data:`Event`) and those of the
        layers above (e.g. the agent's, in ``workbench.agent.events``).
        """
        with self._lock:
            subscribers = list(self._subscribers)
        for _, callback in subscribers:
            try:
                callback(event)
            except Exception:
                logger.exception("event subscriber %r raised on %s; ignored",
                                 callback, type(event).__name__)

    @property
    def subscriber_count(self) -> int:
        with self._lock:
            return len(self._subscribers)
