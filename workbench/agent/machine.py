"""The agent loop: an explicit state machine plan -> generate -> review -> tune -> test -> plan.

Each iteration starts in ``plan`` (the LLM's :class:`~workbench.llm.schemas.Plan` from the
hardware-aware context; without an endpoint a deterministic offline plan; the first
iteration simply asks for a template), then ``generate`` (LLM proposal with validation and
one repair round, or the offline templater), ``review`` (a human's approval of the exact
text, unless ``auto_approve=True`` was chosen explicitly), ``tune`` (an orchestrator
:class:`~workbench.search.orchestrator.Search` over the approved template) and ``test``
(the best re-measured with the baseline in the same runner). ``tune_more`` plans skip
generate and review. Terminal states: ``done`` and ``failed``; the loop also pauses in
``review`` when no decision is available (``AgentOutcome.waiting_for_review``).

Budgets: ``iterations`` (plan steps started) and ``llm_calls`` (requests the agent sends,
repair rounds included) are both enforced; running out ends in ``done`` with the reason,
after everything so far is stored. Every template version is stored with its parent, its
unified diff and its reviews; every trial, LLM call and iteration goes to the store as it
happens, so :func:`~workbench.agent.queries.speedup_per_iteration` is a store query.

Security: LLM-written text is never executed as Python; its CUDA is compiled by nvcc and
run only by a runner's isolated GPU worker. Kernel source and profiler output enter prompts
as fenced data.

The loop's state is one explicit dataclass, :class:`~workbench.agent.records.LoopState`; each
step is a function ``step(host, state) -> state`` that uses only the public
:class:`~workbench.agent.records.StepHost` interface this machine implements (no step
imports this module). The steps live by concept: :mod:`workbench.agent.propose` (plan,
generate, review) and :mod:`workbench.agent.measure` (tune through the one tune path,
test, and the measurements the prompts are built from).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from workbench.agent.context import IterationSummary
from workbench.agent.events import AgentFinished, AgentStateChanged, ReviewRecorded
from workbench.agent.llm_calls import BudgetedClient, LLMCallBudgetError, llm_failure_reason
from workbench.agent.measure import retest_step, tune_step
from workbench.agent.propose import generate_step, plan_step, review_step
from workbench.agent.records import (
    TERMINAL,
    AgentConfig,
    AgentError,
    AgentOutcome,
    AgentState,
    ApproveCallback,
    LoopState,
    StepHost,
    Version,
)
from workbench.agent.runners import RunnerFactory, derive_runner, is_runner
from workbench.core.errors import CompilerNotFoundError, LLMError, ReviewError, WorkbenchError
from workbench.core.events import (
    ErrorEvent,
    EventBus,
    IterationFinished,
    PhaseChanged,
)
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.template import KernelTemplate
from workbench.engine.capabilities import Facts
from workbench.engine.compiler import Compiler
from workbench.engine.runner import Runner
from workbench.search.orchestrator import Search
from workbench.store.approval import approval_key, record_review
from workbench.store.base import AgentIteration, Store
from workbench.store.base import Review as StoredReview

if TYPE_CHECKING:
    from workbench.llm.client import LLMClient


class AgentMachine:
    """The loop's state and its transitions; :meth:`run` steps until it ends or pauses.

    Interactive use (the panel): build it without ``approve``; :meth:`run` returns an
    outcome with ``waiting_for_review``; call :meth:`approve` or :meth:`reject` with the
    reviewer's name, then :meth:`run` again. :meth:`stop` (any thread) ends the loop after
    the trial in flight.
    """

    def __init__(self, folder: KernelFolder, *, runner: Runner | RunnerFactory, store: Store,
                 config: AgentConfig, client: LLMClient | None = None,
                 approve: ApproveCallback | None = None, events: EventBus | None = None,
                 session_id: str | None = None, compiler: Compiler | None = None,
                 device: DeviceSpec | None = None,
                 initial_template: KernelTemplate | None = None) -> None:
        self.folder = folder
        self.store = store
        self.config = config
        self.events = events if events is not None else EventBus()
        self.session_id = session_id or store.create_session(folder.name, notes="agent").id
        self.runner_arg = runner
        self._runners: dict[str, tuple[Runner, bool]] = {}
        self.device = device or self._learn_device()
        self.shape = config.shape or ("decode" if "decode" in folder.shapes
                                      else next(iter(folder.shapes)))
        self.dtype = config.dtype or folder.dtypes[0]
        if self.shape not in folder.shapes:
            raise AgentError(f"unknown shape {self.shape!r} for {folder.name}", key="shape",
                             value=self.shape, expected=sorted(folder.shapes))
        if self.dtype not in folder.dtypes:
            raise AgentError(f"unknown dtype {self.dtype!r} for {folder.name}", key="dtype",
                             value=self.dtype, expected=list(folder.dtypes))
        self.compiler = compiler if compiler is not None else self._default_compiler()
        self.llm = (BudgetedClient(client, config.llm_calls, store, self.session_id)
                    if client is not None else None)
        self.approve_callback = approve
        self.initial_template = initial_template
        self.state = AgentState.PLAN
        self.reason = ""
        self.error = ""
        self.iteration = 0
        self.loop = LoopState()
        self._stop = threading.Event()
        self._search: Search | None = None

    # -- set-up ----------------------------------------------------------------------------

    def _learn_device(self) -> DeviceSpec:
        if is_runner(self.runner_arg):
            return cast(Runner, self.runner_arg).device
        runner = self.runner_for(self.folder.template)
        return runner.device

    def _default_compiler(self) -> Compiler | None:
        base = self.runner_arg if is_runner(self.runner_arg) else None
        if isinstance(base, Facts) and isinstance(base.compiler, Compiler):
            return base.compiler
        try:
            return Compiler(self.device.arch)
        except CompilerNotFoundError:
            return None

    def runner_for(self, template: KernelTemplate) -> Runner:
        key = approval_key(template)
        if key not in self._runners:
            self._runners[key] = derive_runner(self.runner_arg, template)
        return self._runners[key][0]

    def close(self) -> None:
        """Close the runners the agent made (never the one it was given)."""
        for runner, owned in self._runners.values():
            if owned:
                runner.close()
        self._runners.clear()

    # -- control ---------------------------------------------------------------------------

    def stop(self) -> None:
        """End the loop after the trial in flight (any thread)."""
        self._stop.set()
        search = self._search
        if search is not None:
            search.stop()

    def approve(self, reviewer: str, note: str = "") -> None:
        """Approve the version waiting for review (its exact text); :meth:`run` continues."""
        self._decide("approved", reviewer, note)

    def reject(self, reviewer: str, note: str = "") -> None:
        """Reject the version waiting for review; :meth:`run` continues without it."""
        self._decide("rejected", reviewer, note)

    def _decide(self, decision: str, reviewer: str, note: str) -> None:
        if self.loop.pending is None:
            raise ReviewError("no template version is waiting for review", key="pending",
                              value=None)
        self.record_review(self.loop.pending, decision, reviewer, note)
        self.loop.waiting = False

    # -- running ---------------------------------------------------------------------------

    def run(self) -> AgentOutcome:
        """Step until ``done``/``failed`` or a pause for review; the outcome either way."""
        self.loop.waiting = False
        while self.state not in TERMINAL and not self.loop.waiting:
            if self._stop.is_set():
                self.finish(AgentState.DONE, "stopped")
                break
            self.step()
        return self.outcome()

    def step(self) -> AgentState:
        """One transition. Expected failures end the loop as data; bugs propagate (after
        the iteration so far is stored)."""
        handlers: dict[AgentState, Callable[[StepHost, LoopState], LoopState]] = {
            AgentState.PLAN: plan_step, AgentState.GENERATE: generate_step,
            AgentState.REVIEW: review_step, AgentState.TUNE: tune_step,
            AgentState.TEST: retest_step}
        if self.llm is not None and self.state in (AgentState.PLAN, AgentState.GENERATE):
            self.llm.start_stage()  # each LLM stage gets its own deadline, not the run's
        try:
            self.loop = handlers[self.state](self, self.loop)
        except LLMCallBudgetError as exc:
            self.loop.detail["stopped_at"] = self.state.value
            self.finish(AgentState.DONE, f"LLM-call budget spent ({exc.used_calls} of "
                                          f"{exc.budget_calls} calls) before {self.state.value}")
        except LLMError as exc:
            self.error = exc.message
            self.finish(AgentState.FAILED,
                        llm_failure_reason(exc, self.state.value, self.iteration))
        except WorkbenchError as exc:
            self.error = exc.message
            self.finish(AgentState.FAILED, f"{type(exc).__name__} during "
                                            f"{self.state.value}: {exc.message}")
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self.events.publish(ErrorEvent(f"agent failed: {exc}", traceback.format_exc()))
            self.finish(AgentState.FAILED, f"unexpected error during {self.state.value}: "
                                            f"{self.error}")
            raise
        return self.state

    def outcome(self) -> AgentOutcome:
        """The outcome so far."""
        best, base, version = self.loop.best if self.loop.best is not None else (None, None, None)
        state = AgentState.REVIEW if self.loop.waiting else self.state
        return AgentOutcome(
            session_id=self.session_id, state=state, reason=self.reason,
            iterations=self.iteration, llm_calls=self.llm.calls_made if self.llm else 0,
            current_version_id=self.loop.current.id if self.loop.current else None,
            pending_version_id=self.loop.pending.id if self.loop.pending else None, best=best,
            best_version_id=version, baseline_us=base, error=self.error)

    # -- bookkeeping -----------------------------------------------------------------------

    def enter(self, state: AgentState, detail: str = "") -> None:
        self.state = state
        self.events.publish(AgentStateChanged(state.value, self.iteration, detail))
        self.events.publish(PhaseChanged(f"agent: {state.value}", detail))

    def _best_so_far(self) -> dict[str, Any]:
        if self.loop.best is None:
            return {}
        best, base, version = self.loop.best
        return {"best_us": best.median_us, "baseline_us": base, "version_id": version,
                "config": dict(best.config),
                "speedup": base / best.median_us if base and best.median_us else None}

    def store_iteration(self, state: str) -> None:
        so_far = self._best_so_far()
        detail = {**self.loop.detail, "best_so_far": so_far}
        self.store.record_iteration(AgentIteration(
            session_id=self.session_id, iteration=self.iteration, state=state,
            best_us=so_far.get("best_us"), speedup=so_far.get("speedup"), detail=detail))

    def end_iteration(self, state: str, summary: str, result: str) -> None:
        sha = self.loop.current.template.source_sha256 if self.loop.current else ""
        action = self.loop.plan.next_action.value if self.loop.plan else ""
        self.loop.history.append(IterationSummary(self.iteration, action, summary, result, sha))
        self.store_iteration(state)
        self.loop.iteration_open = False
        so_far = self._best_so_far()
        self.events.publish(IterationFinished(self.iteration, so_far.get("best_us"),
                                              so_far.get("speedup"), result))

    def finish(self, state: AgentState, reason: str) -> None:
        self.reason = reason
        self.loop.detail["stop_reason"] = reason
        self.loop.detail.setdefault("stopped_at", self.state.value)
        if self.error:
            self.loop.detail["error"] = self.error
        if self.loop.iteration_open:
            self.store_iteration(state.value if state is AgentState.FAILED
                                  else f"{self.state.value}:stopped")
            self.loop.iteration_open = False
        self.state = state
        self.events.publish(AgentStateChanged(state.value, self.iteration, reason))
        so_far = self._best_so_far()
        self.events.publish(AgentFinished(state.value, reason, self.iteration,
                                                    so_far.get("best_us"),
                                                    so_far.get("speedup")))
        self.close()

    # -- review records ----------------------------------------------------------------------

    def record_review(self, version: Version, decision: str, reviewer: str,
                       note: str = "") -> None:
        review = record_review(self.store, self.folder.name, version.template, decision,
                               reviewer, note, origin=version.origin)
        self.events.publish(ReviewRecorded(version.id, review.decision, review.reviewer))

    def stop_requested(self) -> bool:
        """Whether :meth:`stop` was called (any thread)."""
        return self._stop.is_set()

    def hold_search(self, search: Search | None) -> None:
        """The search a tune step runs now (so :meth:`stop` reaches it), or None after."""
        self._search = search
        if search is not None and self._stop.is_set():
            search.stop()

    def reviews(self, version: Version) -> list[StoredReview]:
        key = version.text_sha256
        return [r for r in self.store.reviews(version.id) if r.approved_text_sha256 == key]
