"""The agent's records: its states, its settings, what a reviewer is shown, its outcome."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from workbench.agent.context import IterationSummary
from workbench.agent.llm_calls import BudgetedClient
from workbench.agent.runners import RunnerFactory
from workbench.core.cache_profile import L2Profile
from workbench.core.errors import WorkbenchError
from workbench.core.events import EventBus
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.engine.runner import Runner
from workbench.engine.tuning import TuneReport
from workbench.llm.schemas import Plan
from workbench.llm.validation import ValidationReport
from workbench.search.budget import Budget
from workbench.search.orchestrator import Search
from workbench.store.approval import approval_key
from workbench.store.base import AgentIteration, Review, Store


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
    current template in that step); ``confirm`` is the tune path's confirmation, as in
    ``workbench tune --confirm`` (the k fastest configs measured twice more, under the cache
    conditions where the runner can; the test step reports the confirmed pick, or
    re-measures the best where the runner cannot confirm); ``shape``/``dtype`` default to
    the folder's first shape named ``decode`` (else its first shape) and its first dtype.
    """

    iterations: int = 3
    llm_calls: int = 12
    auto_approve: bool = False
    allow_unverified: bool = False  # auto-approve templates correctness could not check
    strategy: str = "guided"
    budget: Budget = field(default_factory=lambda: Budget(max_evaluations=16))
    confirm: int = 5
    shape: str | None = None
    dtype: str | None = None
    seed: int = 0
    reviewer: str = "user"
    profile: bool = True
    widen: int = 0  # rounds of range widening after each tune step (as `tune --widen`)

    def __post_init__(self) -> None:
        for name in ("iterations", "llm_calls", "confirm", "widen"):
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
class Version:
    """One stored template version as the agent holds it."""

    id: str
    template: KernelTemplate
    origin: str
    parent_id: str | None
    diff: str
    validation: ValidationReport | None

    @property
    def text_sha256(self) -> str:
        """The approval key: what a review of this version approves."""
        return approval_key(self.template)


@dataclass
class LoopState:
    """Everything the loop knows between steps; each step takes it and returns it."""

    iteration_open: bool = False
    waiting: bool = False  # paused for a review decision
    plan: Plan | None = None
    suggestions: list[Mapping[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)  # the iteration's stored detail
    history: list[IterationSummary] = field(default_factory=list)
    current: Version | None = None  # the approved version being tuned
    pending: Version | None = None  # a version waiting for review
    version_best: TrialResult | None = None  # the current version's search best
    version_report: TuneReport | None = None  # its tune report (confirmation included)
    best: tuple[TrialResult, float | None, str] | None = None  # (re-tested, baseline, version)
    baselines: dict[str, float | None] = field(default_factory=dict)  # per approval key
    copy_gb: float | bool | None = False  # False: not asked yet
    ncu: dict[tuple[str, str], Mapping[str, float | str] | None] = field(default_factory=dict)
    l2: L2Profile | None = None  # the current version's finalists (2-D tiled kernels)


class StepHost(Protocol):
    """What a step may use of the machine: its settings, services and transitions."""

    folder: KernelFolder
    store: Store
    config: AgentConfig
    events: EventBus
    session_id: str
    device: DeviceSpec
    shape: str
    dtype: str
    compiler: Compiler | None
    llm: BudgetedClient | None
    iteration: int
    reason: str
    runner_arg: Runner | RunnerFactory
    approve_callback: ApproveCallback | None
    initial_template: KernelTemplate | None

    def runner_for(self, template: KernelTemplate) -> Runner: ...
    def enter(self, state: AgentState, detail: str = "") -> None: ...
    def finish(self, state: AgentState, reason: str) -> None: ...
    def end_iteration(self, state: str, summary: str, result: str) -> None: ...
    def store_iteration(self, state: str) -> None: ...
    def record_review(self, version: Version, decision: str, reviewer: str,
                      note: str = "") -> None: ...
    def reviews(self, version: Version) -> list[Review]: ...
    def stop_requested(self) -> bool: ...
    def hold_search(self, search: Search | None) -> None: ...


@dataclass(frozen=True)
class ReviewRequest:
    """What an ``approve`` callback is shown: the exact text's hash, the diff, validation."""

    iteration: int
    version_id: str
    parent_id: str | None
    origin: str
    template: KernelTemplate
    template_sha256: str  # the approval key (workbench.store.approval.approval_key)
    diff: str
    validation: ValidationReport | None


#: The reviewer's answer: True approves, False rejects, None leaves the version waiting.
ApproveCallback = Callable[[ReviewRequest], "bool | None"]


@dataclass(frozen=True)
class IterationView:
    """One stored agent iteration as the panel's Agent tab shows it (one reader of the
    ``detail`` the machine writes, so the writer and the reader cannot drift apart)."""

    iteration: int
    state: str
    plan: str         # the plan's next action and diagnosis
    version_id: str   # the template version proposed or tuned
    diff: str         # the version's unified diff from its parent (or the baseline)
    approval: str     # "approved by ana", "pending", "rejected: ..."
    best_us: float | None
    speedup: float | None

    @classmethod
    def from_stored(cls, iteration: AgentIteration) -> IterationView:
        detail = iteration.detail or {}
        plan = detail.get("plan") or {}
        review = detail.get("review") or {}
        decision = str(review.get("decision", ""))
        approval = (f"{decision} by {review['reviewer']}" if review.get("reviewer")
                    else f"{decision}: {review['message']}" if review.get("message")
                    else decision)
        return cls(iteration=iteration.iteration, state=iteration.state,
                   plan=(f"{plan.get('next_action', '')}: {plan.get('diagnosis', '')}"
                         if plan else ""),
                   version_id=str(detail.get("version_id") or review.get("version_id") or ""),
                   diff=str(detail.get("diff", "")), approval=approval,
                   best_us=iteration.best_us, speedup=iteration.speedup)


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
