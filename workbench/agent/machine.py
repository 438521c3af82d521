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
"""

from __future__ import annotations

import threading
import traceback
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from workbench.agent.context import (
    IterationSummary,
    measurement,
    offline_plan,
    prompt_context,
    space_summary,
)
from workbench.agent.events import (
    AgentFinished,
    AgentStateChanged,
    BestRetested,
    PlanMade,
    ProposalRejected,
    ReviewRecorded,
    ReviewRequested,
    TemplateProposed,
)
from workbench.agent.llm_calls import BudgetedClient, LLMCallBudgetError
from workbench.agent.profile import profile_config
from workbench.agent.records import (
    AUTO_REVIEWER,
    TERMINAL,
    AgentConfig,
    AgentError,
    AgentOutcome,
    AgentState,
    ApproveCallback,
    ReviewRequest,
)
from workbench.agent.runners import RunnerFactory, derive_runner, is_live, is_runner, provenance_for
from workbench.core.errors import CompilerNotFoundError, LLMError, ReviewError, WorkbenchError
from workbench.core.events import (
    ErrorEvent,
    EventBus,
    IterationFinished,
    IterationStarted,
    PhaseChanged,
)
from workbench.core.hardware import DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.engine.runner import Runner
from workbench.llm.prompts import KernelBrief, plan_messages
from workbench.llm.review import Decision, require_approved, template_sha256, template_text
from workbench.llm.review import Review as TextReview
from workbench.llm.schemas import NextAction, Plan, TemplateProposal
from workbench.llm.templater import offline_template, unified_diff
from workbench.llm.validation import (
    ProposalAttempt,
    ValidationReport,
    propose_template,
    validate_proposal,
)
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search
from workbench.search.pruning import LaunchPruner
from workbench.store.base import AgentIteration, Store, TemplateVersion
from workbench.store.base import Review as StoredReview

if TYPE_CHECKING:
    from workbench.llm.client import LLMClient


@dataclass(frozen=True)
class _Version:
    id: str
    template: KernelTemplate
    origin: str
    parent_id: str | None
    diff: str
    validation: ValidationReport | None

    @property
    def text_sha256(self) -> str:
        return template_sha256(self.template)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _report_dict(report: ValidationReport | None) -> dict[str, Any]:
    if report is None:
        return {"status": "not run"}
    return {"status": report.status, "note": report.note, "problems": report.messages(),
            "checks_passed": list(report.checks_passed),
            "checks_skipped": list(report.checks_skipped)}


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
        self._runner_arg = runner
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
        self._approve = approve
        self._initial_template = initial_template
        self.state = AgentState.PLAN
        self.reason = ""
        self.error = ""
        self.iteration = 0
        self._iteration_open = False
        self._waiting = False
        self._stop = threading.Event()
        self._search: Search | None = None
        self._plan: Plan | None = None
        self._suggestions: list[Mapping[str, Any]] = []
        self._detail: dict[str, Any] = {}
        self._history: list[IterationSummary] = []
        self._current: _Version | None = None
        self._pending: _Version | None = None
        self._version_best: TrialResult | None = None
        self._best: tuple[TrialResult, float | None, str] | None = None
        self._baselines: dict[str, float | None] = {}
        self._copy_gb: float | bool | None = False  # False: not asked yet
        self._ncu: dict[tuple[str, str], Mapping[str, float | str] | None] = {}

    # -- set-up ----------------------------------------------------------------------------

    def _learn_device(self) -> DeviceSpec:
        if is_runner(self._runner_arg):
            return cast(Runner, self._runner_arg).device
        runner = self._runner_for(self.folder.template)
        return runner.device

    def _default_compiler(self) -> Compiler | None:
        base = self._runner_arg if is_runner(self._runner_arg) else None
        own = getattr(base, "compiler", None)
        if isinstance(own, Compiler):
            return own
        try:
            return Compiler(self.device.arch)
        except CompilerNotFoundError:
            return None

    def _runner_for(self, template: KernelTemplate) -> Runner:
        key = template_sha256(template)
        if key not in self._runners:
            self._runners[key] = derive_runner(self._runner_arg, template)
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
        self._decide(Decision.APPROVED, reviewer, note)

    def reject(self, reviewer: str, note: str = "") -> None:
        """Reject the version waiting for review; :meth:`run` continues without it."""
        self._decide(Decision.REJECTED, reviewer, note)

    def _decide(self, decision: Decision, reviewer: str, note: str) -> None:
        if self._pending is None:
            raise ReviewError("no template version is waiting for review", key="pending",
                              value=None)
        self._record_review(self._pending, TextReview.make(self._pending.template, decision,
                                                           reviewer, note))
        self._waiting = False

    # -- running ---------------------------------------------------------------------------

    def run(self) -> AgentOutcome:
        """Step until ``done``/``failed`` or a pause for review; the outcome either way."""
        self._waiting = False
        while self.state not in TERMINAL and not self._waiting:
            if self._stop.is_set():
                self._finish(AgentState.DONE, "stopped")
                break
            self.step()
        return self.outcome()

    def step(self) -> AgentState:
        """One transition. Expected failures end the loop as data; bugs propagate (after
        the iteration so far is stored)."""
        handlers = {AgentState.PLAN: self._do_plan, AgentState.GENERATE: self._do_generate,
                    AgentState.REVIEW: self._do_review, AgentState.TUNE: self._do_tune,
                    AgentState.TEST: self._do_test}
        try:
            handlers[self.state]()
        except LLMCallBudgetError as exc:
            self._detail["stopped_at"] = self.state.value
            self._finish(AgentState.DONE, f"LLM-call budget spent ({exc.used_calls} of "
                                          f"{exc.budget_calls} calls) before {self.state.value}")
        except LLMError as exc:
            self.error = exc.message
            self._finish(AgentState.FAILED, f"LLM failed during {self.state.value}: "
                                            f"{exc.message}")
        except WorkbenchError as exc:
            self.error = exc.message
            self._finish(AgentState.FAILED, f"{type(exc).__name__} during "
                                            f"{self.state.value}: {exc.message}")
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self.events.publish(ErrorEvent(f"agent failed: {exc}", traceback.format_exc()))
            self._finish(AgentState.FAILED, f"unexpected error during {self.state.value}: "
                                            f"{self.error}")
            raise
        return self.state

    def outcome(self) -> AgentOutcome:
        """The outcome so far."""
        best, base, version = self._best if self._best is not None else (None, None, None)
        state = AgentState.REVIEW if self._waiting else self.state
        return AgentOutcome(
            session_id=self.session_id, state=state, reason=self.reason,
            iterations=self.iteration, llm_calls=self.llm.calls_made if self.llm else 0,
            current_version_id=self._current.id if self._current else None,
            pending_version_id=self._pending.id if self._pending else None, best=best,
            best_version_id=version, baseline_us=base, error=self.error)

    # -- bookkeeping -----------------------------------------------------------------------

    def _enter(self, state: AgentState, detail: str = "") -> None:
        self.state = state
        self.events.publish(AgentStateChanged(state.value, self.iteration, detail))
        self.events.publish(PhaseChanged(f"agent: {state.value}", detail))

    def _best_so_far(self) -> dict[str, Any]:
        if self._best is None:
            return {}
        best, base, version = self._best
        return {"best_us": best.median_us, "baseline_us": base, "version_id": version,
                "config": dict(best.config),
                "speedup": base / best.median_us if base and best.median_us else None}

    def _store_iteration(self, state: str) -> None:
        so_far = self._best_so_far()
        detail = {**self._detail, "best_so_far": so_far}
        self.store.record_iteration(AgentIteration(
            session_id=self.session_id, iteration=self.iteration, state=state,
            best_us=so_far.get("best_us"), speedup=so_far.get("speedup"), detail=detail))

    def _end_iteration(self, state: str, summary: str, result: str) -> None:
        sha = self._current.template.source_sha256 if self._current else ""
        action = self._plan.next_action.value if self._plan else ""
        self._history.append(IterationSummary(self.iteration, action, summary, result, sha))
        self._store_iteration(state)
        self._iteration_open = False
        so_far = self._best_so_far()
        self.events.publish(IterationFinished(self.iteration, so_far.get("best_us"),
                                              so_far.get("speedup"), result))

    def _finish(self, state: AgentState, reason: str) -> None:
        self.reason = reason
        self._detail["stop_reason"] = reason
        if self.error:
            self._detail["error"] = self.error
        if self._iteration_open:
            self._store_iteration(state.value if state is AgentState.FAILED
                                  else f"{self.state.value}:stopped")
            self._iteration_open = False
        self.state = state
        self.events.publish(AgentStateChanged(state.value, self.iteration, reason))
        so_far = self._best_so_far()
        self.events.publish(AgentFinished(state.value, reason, self.iteration,
                                                    so_far.get("best_us"),
                                                    so_far.get("speedup")))
        self.close()

    # -- plan ------------------------------------------------------------------------------

    def _do_plan(self) -> None:
        if self.iteration >= self.config.iterations:
            self._finish(AgentState.DONE,
                         f"iteration budget spent ({self.config.iterations} iterations)")
            return
        self.iteration += 1
        self._iteration_open = True
        self._detail = {"shape": self.shape, "dtype": self.dtype}
        self.events.publish(IterationStarted(self.iteration))
        if self._current is None:
            plan, source = Plan(diagnosis="no template yet",
                                next_action=NextAction.NEW_TEMPLATE), "initial"
        elif self.llm is not None:
            plan, source = self._llm_plan(), "llm"
        else:
            plan, source = self._offline_plan(), "offline"
        self._plan = plan
        self._suggestions = list(plan.configs_to_enqueue)
        self._detail["plan"] = {"source": source, **plan.model_dump(mode="json")}
        self.events.publish(PlanMade(
            self.iteration, source, plan.next_action.value, plan.diagnosis,
            tuple(plan.hypotheses), tuple(plan.configs_to_enqueue)))
        if plan.next_action is NextAction.STOP:
            self._end_iteration("plan", "plan: stop", plan.diagnosis)
            self._finish(AgentState.DONE, f"the plan says stop: {plan.diagnosis}")
        elif plan.next_action is NextAction.TUNE_MORE:
            self._enter(AgentState.TUNE, "tune more")
        else:
            self._enter(AgentState.GENERATE, plan.next_action.value)

    def _measured_configs(self, version: _Version) -> list[Config]:
        runner = self._runner_for(version.template)
        prov = provenance_for(runner, version.template)
        return [t.result.config for t in self.store.trials(prov, self.shape, self.dtype)
                if t.result.status is not Status.PRUNED]

    def _space(self, template: KernelTemplate) -> Any:
        return template.space(self.folder.env(self.shape, self.dtype, self.device))

    def _offline_plan(self) -> Plan:
        assert self._current is not None
        limit = self.config.budget.max_evaluations or 8
        return offline_plan(self._space(self._current.template),
                            self._measured_configs(self._current), self._version_best, limit)

    def _copy_bandwidth(self, runner: Runner) -> float | None:
        if self._copy_gb is False:
            copy = getattr(runner, "copy_timing", None)
            value: float | None = None
            if callable(copy):
                try:
                    value = float(copy(self.shape, self.dtype).bandwidth_gb_per_s)
                except WorkbenchError:
                    value = None
            self._copy_gb = value
        return self._copy_gb if isinstance(self._copy_gb, float) else None

    def _context(self) -> Any:
        measurements = []
        if self._current is not None:
            runner = self._runner_for(self._current.template)
            best = self._version_best
            ncu = None
            if best is not None and best.status is Status.OK and self.config.profile \
                    and is_live(runner) and self.compiler is not None:
                key = (self._current.id, best.config.key())
                if key not in self._ncu:
                    self._ncu[key] = profile_config(self.folder, self._current.template,
                                                    best.config, self.shape, self.dtype,
                                                    compiler=self.compiler)
                ncu = self._ncu[key]
            measurements.append(measurement(
                self.folder, self.shape, self.dtype,
                baseline_us=self._baselines.get(self._current.text_sha256), best=best,
                copy_gb_per_s=self._copy_bandwidth(runner), ncu_metrics=ncu))
        return prompt_context(self.device, measurements, self._history)

    def _llm_plan(self) -> Plan:
        assert self._current is not None and self.llm is not None
        template = self._current.template
        summary = space_summary(self._space(template), len(self._measured_configs(self._current)))
        messages = plan_messages(KernelBrief.from_folder(self.folder), self._context(),
                                 TemplateProposal.from_template(template),
                                 space_summary=summary)
        return self.llm.complete(messages, Plan, purpose="plan")

    # -- generate --------------------------------------------------------------------------

    def _on_attempt(self, attempt: ProposalAttempt) -> None:
        self._detail.setdefault("attempts", []).append(
            {"round": attempt.round, "problems": list(attempt.problems),
             "raw_reply": attempt.raw_reply[:20000]})

    def _correctness(self) -> Any:
        if not is_live(self._runner_arg if is_runner(self._runner_arg) else None):
            return None

        def check(template: KernelTemplate, config: Config, shape: str,
                  dtype: str) -> TrialResult:
            runner = self._runner_for(template)
            return next(iter(runner.measure([Candidate(config, shape, dtype)])))
        return check

    def _do_generate(self) -> None:
        action = self._plan.next_action if self._plan else NextAction.NEW_TEMPLATE
        report: ValidationReport | None
        if self._current is None and self._initial_template is not None:
            template, origin = self._initial_template, "curated"
            report = validate_proposal(TemplateProposal.from_template(template), self.folder,
                                       device=self.device, compiler=self.compiler)
        elif self.llm is not None:
            current = (TemplateProposal.from_template(self._current.template)
                       if action is NextAction.REFINE_TEMPLATE and self._current else None)
            outcome = propose_template(
                self.folder, cast("LLMClient", self.llm), context=self._context(),
                device=self.device, compiler=self.compiler, correctness=self._correctness(),
                current=current, repair_rounds=1, on_attempt=self._on_attempt)
            if outcome.template is None:
                problems = tuple(outcome.reasons)
                self._detail["proposal"] = {"status": "failed", "problems": list(problems)}
                self.events.publish(ProposalRejected(self.iteration, problems))
                if self._current is None:
                    self._finish(AgentState.FAILED, "no valid template: the proposal failed "
                                 "validation after its repair round: " + "; ".join(problems))
                    return
                self._end_iteration("generate", f"{action.value}: proposal failed validation",
                                    "; ".join(problems)[:500])
                self._enter(AgentState.PLAN)
                return
            template, origin, report = outcome.template, "llm", outcome.report
        else:
            made = offline_template(self.folder)
            report = validate_proposal(made.proposal, self.folder, device=self.device,
                                       compiler=self.compiler)
            template, origin = made.template, "offline"
        self._detail["validation"] = _report_dict(report)
        if report is not None and not report.ok:
            self._finish(AgentState.FAILED, f"the {origin} template fails validation: "
                         + "; ".join(report.messages()))
            return
        if self._current is not None and template_sha256(template) == self._current.text_sha256:
            self._detail["proposal"] = {"status": "unchanged"}
            self._enter(AgentState.TUNE, "proposal identical to the current version")
            return
        self._pending = self._store_version(template, origin, report)
        self._enter(AgentState.REVIEW, self._pending.id)

    def _store_version(self, template: KernelTemplate, origin: str,
                       report: ValidationReport | None) -> _Version:
        version_id = uuid.uuid4().hex
        parent = self._current
        if parent is not None:
            diff = unified_diff(template_text(parent.template), template_text(template),
                                f"version {parent.id[:12]}", f"version {version_id[:12]}")
        else:
            diff = unified_diff(self.folder.baseline.source, template.source,
                                self.folder.baseline.source_name, template.source_name)
        self.store.add_template_version(TemplateVersion(
            id=version_id, kernel=self.folder.name, source_text=template.source,
            source_sha256=template.source_sha256,
            params={p.name: p.to_dict() for p in template.params},
            constraints=tuple(c.text for c in template.constraints),
            launch=template.launch.to_dict(), origin=origin,
            parent_id=parent.id if parent else None, diff_vs_parent=diff,
            session_id=self.session_id))
        version = _Version(version_id, template, origin, parent.id if parent else None, diff,
                           report)
        note = f"validation: {report.status} ({report.note})" if report else ""
        self._record_review(version, TextReview.make(template, Decision.PROPOSED, "agent", note))
        self._detail["version_id"] = version_id
        self.events.publish(TemplateProposed(
            self.iteration, version_id, version.parent_id, origin, version.text_sha256, diff,
            report.status if report else "not run", report.note if report else ""))
        return version

    # -- review ----------------------------------------------------------------------------

    def _record_review(self, version: _Version, review: TextReview) -> None:
        if review.template_sha256 != version.text_sha256:
            raise ReviewError("the review is of a different template text",
                              key="template_sha256", value=review.template_sha256,
                              expected=version.text_sha256)
        self.store.add_review(StoredReview(
            template_version_id=version.id, decision=review.decision.value,
            reviewer=review.reviewer, time=review.time_utc, note=review.note,
            approved_text_sha256=review.template_sha256))
        self.events.publish(ReviewRecorded(version.id, review.decision.value,
                                                     review.reviewer))

    def _reviews(self, version: _Version) -> list[TextReview]:
        return [TextReview(template_sha256=r.approved_text_sha256, decision=Decision(r.decision),
                           reviewer=r.reviewer, time_utc=r.time, note=r.note)
                for r in self.store.reviews(version.id)]

    def _do_review(self) -> None:
        version = self._pending
        assert version is not None
        decided = [r for r in self._reviews(version) if r.decision is not Decision.PROPOSED]
        if not decided:
            if self.config.auto_approve:
                self._record_review(version, TextReview.make(
                    version.template, Decision.APPROVED, AUTO_REVIEWER,
                    "auto_approve=True was set explicitly"))
            elif self._approve is not None:
                answer = self._approve(ReviewRequest(
                    self.iteration, version.id, version.parent_id, version.origin,
                    version.template, version.text_sha256, version.diff, version.validation))
                if isinstance(answer, TextReview):
                    self._record_review(version, answer)
                elif answer is not None:
                    decision = Decision.APPROVED if answer else Decision.REJECTED
                    self._record_review(version, TextReview.make(
                        version.template, decision, self.config.reviewer, "approve callback"))
            if not [r for r in self._reviews(version) if r.decision is not Decision.PROPOSED]:
                self._waiting = True
                self.reason = f"waiting for review of template version {version.id}"
                self._detail["review"] = {"decision": "pending", "version_id": version.id}
                self._store_iteration("review")
                self.events.publish(ReviewRequested(
                    self.iteration, version.id, version.text_sha256, version.diff))
                return
        try:
            approval = require_approved(version.template, self._reviews(version))
        except ReviewError as exc:
            self._detail["review"] = {"decision": "rejected", "version_id": version.id,
                                      "message": exc.message}
            self._pending = None
            if self._current is None:
                self._finish(AgentState.DONE, f"template rejected: {exc.message}")
                return
            self._end_iteration("review", "proposal rejected by the reviewer", exc.message)
            self._enter(AgentState.PLAN)
            return
        assert approval is not None
        self._detail["review"] = {"decision": "approved", "version_id": version.id,
                                  "reviewer": approval.reviewer,
                                  "template_sha256": approval.template_sha256}
        self._current, self._pending = version, None
        self._version_best = None
        self._enter(AgentState.TUNE, version.id)

    # -- tune and test ---------------------------------------------------------------------

    def _baseline_us(self, version: _Version, runner: Runner) -> float | None:
        key = version.text_sha256
        if key not in self._baselines:
            try:
                base = runner.baseline(self.shape, self.dtype)
                self._baselines[key] = base.median_us if base.status is Status.OK else None
            except WorkbenchError as exc:
                self._detail.setdefault("notes", []).append(f"no baseline: {exc.message}")
                self._baselines[key] = None
        return self._baselines[key]

    def _do_tune(self) -> None:
        version = self._current
        assert version is not None
        template = version.template
        # the gate, once more, right before GPU time is spent
        require_approved(template, self._reviews(version))
        runner = self._runner_for(template)
        baseline_us = self._baseline_us(version, runner)
        prov = provenance_for(runner, template)
        space = self._space(template).require_nonempty()
        already = sum(1 for t in self.store.trials(prov, self.shape, self.dtype)
                      if t.result.status is not Status.PRUNED and t.result.config in space)
        kept: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        for config in self._suggestions:
            try:
                ok = Config(config) in space
            except (WorkbenchError, TypeError, ValueError):
                ok = False
            (kept if ok else dropped).append(dict(config))
        b = self.config.budget
        budget = Budget(max_evaluations=(already + b.max_evaluations
                                         if b.max_evaluations is not None else None),
                        max_wall_s=b.max_wall_s, patience=b.patience)

        def env_for(shape: str) -> dict[str, Any]:
            return self.folder.env(shape, self.dtype, self.device)

        search = Search(lambda s: template.space(env_for(s)), runner,
                        SearchConfig(shapes=(self.shape,), dtype=self.dtype,
                                     strategy=self.config.strategy, seed=self.config.seed,
                                     budget=budget),
                        store=self.store, provenance=prov, session_id=self.session_id,
                        events=self.events,
                        pruners=[LaunchPruner(template.launch, self.device, env_for)],
                        suggestions=kept,
                        baselines_us={self.shape: baseline_us} if baseline_us else None)
        self._search = search
        if self._stop.is_set():
            search.stop()
        try:
            outcome = search.run()
        finally:
            self._search = None
        shape_outcome = outcome.shapes[self.shape]
        self._version_best = shape_outcome.best
        self._detail["search"] = {
            "version_id": version.id, "reason": shape_outcome.reason,
            "evaluated": shape_outcome.evaluated, "measured_now": shape_outcome.measured_now,
            "pruned": shape_outcome.pruned, "enqueued": kept, "dropped_suggestions": dropped,
            "provenance": dict(prov.__dict__), "baseline_us": baseline_us,
            "runner": runner.description}
        if outcome.reason == "stopped":
            self._finish(AgentState.DONE, "stopped")
            return
        self._enter(AgentState.TEST)

    def _do_test(self) -> None:
        version = self._current
        assert version is not None
        best = self._version_best
        if best is None or best.status is not Status.OK:
            self._detail["test"] = {"status": "no valid config"}
            self._end_iteration("test", f"tuned version {version.id[:12]}",
                                "no config verified and timed")
            self._enter(AgentState.PLAN)
            return
        runner = self._runner_for(version.template)
        again = next(iter(runner.measure([Candidate(best.config, self.shape, self.dtype)])))
        try:
            base = runner.baseline(self.shape, self.dtype)
            baseline_us = base.median_us if base.status is Status.OK else None
        except WorkbenchError:
            baseline_us = None
        best_us = again.median_us if again.status is Status.OK else None
        speedup = baseline_us / best_us if baseline_us and best_us else None
        self._detail["test"] = {"status": again.status.value, "reason": again.reason,
                                "config": dict(best.config), "best_us": best_us,
                                "search_best_us": best.median_us, "baseline_us": baseline_us,
                                "speedup": speedup, "source": again.source,
                                "version_id": version.id}
        if best_us is not None and (self._best is None or best_us < (self._best[0].median_us
                                                                      or float("inf"))):
            self._best = (again, baseline_us, version.id)
        self.events.publish(BestRetested(self.iteration, dict(best.config),
                                                    again.status.value, best_us, baseline_us,
                                                    speedup))
        result = (f"best {best_us:.2f} us at {dict(best.config)}"
                  + (f", {speedup:.2f}x vs baseline" if speedup else "")
                  if best_us is not None else f"re-test {again.status.value}: {again.reason}")
        self._end_iteration("test", f"tuned version {version.id[:12]} ({version.origin})",
                            result)
        self._enter(AgentState.PLAN)
