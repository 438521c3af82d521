"""Typed events the agent publishes (besides core's IterationStarted/IterationFinished and
the search's own events). Frozen records; the agent never prints.

These are not yet members of ``workbench.core.events.Event``; the bus delivers any object,
so subscribers match them with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.core.budget_words import BudgetSplit


@dataclass(frozen=True)
class AgentStateChanged:
    """The agent entered ``state`` (plan | generate | review | tune | test | done | failed)."""

    state: str
    iteration: int
    detail: str = ""


@dataclass(frozen=True)
class PlanMade:
    """A plan for ``iteration``; ``source`` is "llm", "offline" or "initial"."""

    iteration: int
    source: str
    next_action: str
    diagnosis: str
    hypotheses: tuple[str, ...] = ()
    configs_to_enqueue: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class TemplateProposed:
    """A new template version is stored; ``diff`` is unified, against its parent (or the
    baseline source for the first version)."""

    iteration: int
    version_id: str
    parent_id: str | None
    origin: str  # llm | offline | curated
    template_sha256: str  # the approval key (workbench.store.approval.approval_key)
    diff: str
    validation_status: str  # ok | unverified | failed | not run
    validation_note: str = ""


@dataclass(frozen=True)
class ProposalRejected:
    """A proposal failed validation after its repair round; nothing was stored as a version."""

    iteration: int
    problems: tuple[str, ...]


@dataclass(frozen=True)
class ReviewRequested:
    """The agent waits for a human decision on ``version_id`` (approve or reject)."""

    iteration: int
    version_id: str
    template_sha256: str
    diff: str


@dataclass(frozen=True)
class ReviewRecorded:
    """A decision on ``version_id`` was stored."""

    version_id: str
    decision: str
    reviewer: str


@dataclass(frozen=True)
class BestRetested:
    """The test step re-measured this version's best and the baseline in the same runner."""

    iteration: int
    config: Mapping[str, Any]
    status: str
    best_us: float | None
    baseline_us: float | None
    speedup: float | None


@dataclass(frozen=True)
class TuneBudget:
    """A tune step's budget over what is stored, in the one wording ("N more, M stored"):
    published when the step starts (``stored_evaluations`` = this version's measured
    trials at the shape and dtype, ``reason`` "") and when its search ends (the stored count
    then, and why it ended: budget, patience, exhausted, stopped ...)."""

    iteration: int
    version_id: str
    budget_evaluations: int  # stored + the step's new measurements at most
    stored_evaluations: int
    reason: str = ""

    @property
    def words(self) -> str:
        """``"16 more, 18 stored"``; a space with nothing left: ``"space exhausted, 30
        stored"`` (never a "more" that cannot be measured)."""
        split = BudgetSplit(self.budget_evaluations, self.stored_evaluations)
        if self.reason == "exhausted":
            return f"space exhausted, {split.stored_evaluations} stored"
        return split.words

    @property
    def line(self) -> str:
        """The progress line: ``"tune silu_and_mul-3: 16 more, 18 stored"`` at the start,
        ``"tuned silu_and_mul-3 (budget): 0 more, 34 stored"`` at the end."""
        if not self.reason:
            return f"tune {self.version_id}: {self.words}"
        return f"tuned {self.version_id} ({self.reason}): {self.words}"


@dataclass(frozen=True)
class AgentFinished:
    """The loop stopped: ``state`` done | failed | review (waiting), and why."""

    state: str
    reason: str
    iterations: int
    best_us: float | None = None
    speedup: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


AgentEvent = (AgentStateChanged | PlanMade | TemplateProposed | ProposalRejected
              | ReviewRequested | ReviewRecorded | BestRetested | TuneBudget | AgentFinished)
