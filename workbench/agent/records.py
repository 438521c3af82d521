"""The agent's records: its states, its settings, what a reviewer is shown, its outcome."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from workbench.core.errors import WorkbenchError
from workbench.core.records import TrialResult
from workbench.core.template import KernelTemplate
from workbench.llm.review import Review as TextReview
from workbench.llm.validation import ValidationReport
from workbench.search.budget import Budget


class AgentState(enum.StrEnum):
    """Where the loop is."""

    PLAN = "plan"
    GENERATE = "generate"
    REVIEW = "review"
    TUNE = "tune"
    TEST = "test"
    DONE = "done"
    FAILED = "failed"


TERMINAL = frozenset({AgentState.DONE, AgentState.FAILED})
AUTO_REVIEWER = "auto-approve"


class AgentError(WorkbenchError):
    """The agent was configured wrongly (``key``, ``value``, ``expected``)."""


@dataclass(frozen=True)
class AgentConfig:
    """What one agent run may spend and what it tunes.

    ``budget`` bounds each tune step (``max_evaluations`` counts new measurements of the
    current template in that step); ``shape``/``dtype`` default to the folder's first shape
    named ``decode`` (else its first shape) and its first dtype.
    """

    iterations: int = 3
    llm_calls: int = 12
    auto_approve: bool = False
    allow_unverified: bool = False  # auto-approve templates correctness could not check
    strategy: str = "guided"
    budget: Budget = field(default_factory=lambda: Budget(max_evaluations=16))
    shape: str | None = None
    dtype: str | None = None
    seed: int = 0
    reviewer: str = "user"
    profile: bool = True

    def __post_init__(self) -> None:
        for name in ("iterations", "llm_calls"):
            value = getattr(self, name)
            low = 1 if name == "iterations" else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise AgentError(f"{name} must be an integer >= {low}, got {value!r}",
                                 key=name, value=value, expected=f"int >= {low}")
        if isinstance(self.budget, int):
            object.__setattr__(self, "budget", Budget(max_evaluations=self.budget))
        b = self.budget
        if b.max_evaluations is None and b.max_wall_s is None and b.patience is None:
            raise AgentError("each tune step needs a limit: set budget max_evaluations, "
                             "max_wall_s or patience", key="budget", value=b,
                             expected="a bounded Budget")


@dataclass(frozen=True)
class ReviewRequest:
    """What an ``approve`` callback is shown: the exact text's hash, the diff, validation."""

    iteration: int
    version_id: str
    parent_id: str | None
    origin: str
    template: KernelTemplate
    template_sha256: str
    diff: str
    validation: ValidationReport | None


ApproveCallback = Callable[[ReviewRequest], "bool | TextReview | None"]


@dataclass(frozen=True)
class AgentOutcome:
    """How a run ended (or paused). ``state`` review means: waiting for a decision."""

    session_id: str
    state: AgentState
    reason: str
    iterations: int  # iterations started
    llm_calls: int  # requests sent by the agent
    current_version_id: str | None  # the approved version being tuned
    pending_version_id: str | None  # a version waiting for review
    best: TrialResult | None  # fastest re-measured best so far
    best_version_id: str | None
    baseline_us: float | None  # baseline re-measured with that best
    error: str = ""

    @property
    def best_us(self) -> float | None:
        return self.best.median_us if self.best is not None else None

    @property
    def speedup(self) -> float | None:
        best_us = self.best_us
        return self.baseline_us / best_us if self.baseline_us and best_us else None

    @property
    def waiting_for_review(self) -> bool:
        return self.state is AgentState.REVIEW
