"""The agent's proposing steps: the plan's text (from the LLM or offline), ``generate``
(LLM proposal with validation and one repair round, or the offline templater, each new
version stored with its parent and diff) and ``review`` (a human's approval of the exact
text, unless ``auto_approve=True`` was chosen explicitly).

These are functions of the :class:`~workbench.agent.host.AgentMachine` they step; the
host owns the state and decides the transitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from workbench.agent.context import offline_plan, space_summary
from workbench.agent.events import (
    PlanMade,
    ProposalRejected,
    ReviewRequested,
    TemplateProposed,
)
from workbench.agent.measure import measured_configs, measurement_context, space_of
from workbench.agent.records import (
    AUTO_REVIEWER,
    AgentState,
    LoopState,
    ReviewRequest,
    StepHost,
    Version,
)
from workbench.agent.runners import is_live, is_runner
from workbench.core.errors import ReviewError
from workbench.core.events import IterationStarted
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Candidate, Config, TrialResult
from workbench.core.template import KernelTemplate
from workbench.llm.gate_repair import validate_and_tighten
from workbench.llm.prompts import KernelBrief, plan_messages
from workbench.llm.schemas import NextAction, Plan
from workbench.llm.validation import (
    ProposalAttempt,
    ValidationReport,
    propose_template,
    validate_proposal,
)
from workbench.store.approval import (
    approval_key,
    approval_text,
    ensure_version,
    require_approved,
    version_id,
)
from workbench.templater import offline_template, unified_diff

if TYPE_CHECKING:
    from workbench.llm.client import LLMClient


def _report_dict(report: ValidationReport | None) -> dict[str, Any]:
    if report is None:
        return {"status": "not run"}
    return {"status": report.status, "note": report.note, "problems": report.messages(),
            "checks_passed": list(report.checks_passed),
            "checks_skipped": list(report.checks_skipped)}


# -- plan ----------------------------------------------------------------------------------

def plan_step(host: StepHost, loop: LoopState) -> LoopState:
    """``plan``: start an iteration and decide its action (the first one asks for a
    template; later ones ask the LLM, or the offline plan without one)."""
    if host.iteration >= host.config.iterations:
        host.finish(AgentState.DONE,
                    f"iteration budget spent ({host.config.iterations} iterations)")
        return loop
    host.iteration += 1
    loop.iteration_open = True
    loop.detail = {"shape": host.shape, "dtype": host.dtype}
    host.events.publish(IterationStarted(host.iteration))
    if loop.current is None:
        plan, source = Plan(diagnosis="no template yet",
                            next_action=NextAction.NEW_TEMPLATE), "initial"
    elif host.llm is not None:
        plan, source = plan_with_llm(host, loop), "llm"
    else:
        plan, source = plan_offline(host, loop), "offline"
    loop.plan = plan
    loop.suggestions = list(plan.configs_to_enqueue)
    loop.detail["plan"] = {"source": source, **plan.model_dump(mode="json")}
    host.events.publish(PlanMade(
        host.iteration, source, plan.next_action.value, plan.diagnosis,
        tuple(plan.hypotheses), tuple(plan.configs_to_enqueue)))
    if plan.next_action is NextAction.STOP:
        host.end_iteration("plan", "plan: stop", plan.diagnosis)
        host.finish(AgentState.DONE, f"the plan says stop: {plan.diagnosis}")
    elif plan.next_action is NextAction.TUNE_MORE:
        host.enter(AgentState.TUNE, "tune more")
    else:
        host.enter(AgentState.GENERATE, plan.next_action.value)
    return loop


def plan_offline(host: StepHost, loop: LoopState) -> Plan:
    """The deterministic plan for the current version, without an LLM."""
    assert loop.current is not None
    limit = host.config.budget.max_evaluations or 8
    return offline_plan(space_of(host, loop.current.template),
                        measured_configs(host, loop.current), loop.version_best,
                        limit)


def plan_with_llm(host: StepHost, loop: LoopState) -> Plan:
    """The LLM's plan for the current version, from the hardware-aware context."""
    assert loop.current is not None and host.llm is not None
    template = loop.current.template
    summary = space_summary(space_of(host, template),
                            len(measured_configs(host, loop.current)),
                            edges=loop.version_report.edges
                            if loop.version_report is not None else ())
    messages = plan_messages(KernelBrief.from_folder(host.folder),
                             measurement_context(host, loop),
                             TemplateProposal.from_template(template),
                             space_summary=summary)
    return host.llm.complete(messages, Plan, purpose="plan")


# -- generate ------------------------------------------------------------------------------

def _record_attempt(host: StepHost, loop: LoopState, attempt: ProposalAttempt) -> None:
    loop.detail.setdefault("attempts", []).append(
        {"round": attempt.round, "problems": list(attempt.problems),
         "raw_reply": attempt.raw_reply[:20000]})


def _correctness(host: StepHost) -> Any:
    if not is_live(host.runner_arg if is_runner(host.runner_arg) else None):
        return None

    def check(template: KernelTemplate, config: Config, shape: str,
              dtype: str) -> TrialResult:
        runner = host.runner_for(template)
        return next(iter(runner.measure([Candidate(config, shape, dtype)])))
    return check


def generate_step(host: StepHost, loop: LoopState) -> LoopState:
    """``generate``: a validated template version to review, or the reason there is none."""
    action = loop.plan.next_action if loop.plan else NextAction.NEW_TEMPLATE
    report: ValidationReport | None
    if loop.current is None and host.initial_template is not None:
        template, origin = host.initial_template, "curated"
        report = validate_proposal(TemplateProposal.from_template(template), host.folder,
                                   device=host.device, compiler=host.compiler)
    elif host.llm is not None:
        current = (TemplateProposal.from_template(loop.current.template)
                   if action is NextAction.REFINE_TEMPLATE and loop.current else None)
        outcome = propose_template(
            host.folder, cast("LLMClient", host.llm),
            context=measurement_context(host, loop), device=host.device,
            compiler=host.compiler, correctness=_correctness(host), current=current,
            repair_rounds=1, on_attempt=lambda attempt: _record_attempt(host, loop, attempt))
        if outcome.template is None:
            problems = tuple(outcome.reasons)
            loop.detail["proposal"] = {"status": "failed", "problems": list(problems)}
            host.events.publish(ProposalRejected(host.iteration, problems))
            if loop.current is None:
                host.finish(AgentState.FAILED, "no valid template: the proposal failed "
                                "validation after its repair round: " + "; ".join(problems))
                return loop
            host.end_iteration("generate", f"{action.value}: proposal failed validation",
                                   "; ".join(problems)[:500])
            host.enter(AgentState.PLAN)
            return loop
        template, origin, report = outcome.template, "llm", outcome.report
    else:
        made = offline_template(host.folder)
        gated = validate_and_tighten(made.proposal, host.folder, device=host.device,
                                     compiler=host.compiler, correctness=_correctness(host))
        report, origin = gated.report, "offline"
        template = gated.template or made.template
    loop.detail["validation"] = _report_dict(report)
    if report is not None and not report.ok:
        host.finish(AgentState.FAILED, f"the {origin} template fails validation: "
                        + "; ".join(report.messages()))
        return loop
    if loop.current is not None \
            and approval_key(template) == loop.current.text_sha256:
        loop.detail["proposal"] = {"status": "unchanged"}
        host.enter(AgentState.TUNE, "proposal identical to the current version")
        return loop
    loop.pending = store_version(host, loop, template, origin, report)
    host.enter(AgentState.REVIEW, loop.pending.id)
    return loop


def store_version(host: StepHost, loop: LoopState, template: KernelTemplate, origin: str,
                  report: ValidationReport | None) -> Version:
    """Store ``template`` as a child of the current version (its id is its approval key's),
    with its diff and the agent's ``proposed`` review."""
    vid = version_id(host.folder.name, template)
    parent = loop.current
    if parent is not None:
        diff = unified_diff(approval_text(parent.template), approval_text(template),
                            f"version {parent.id}", f"version {vid}")
    else:
        diff = unified_diff(host.folder.baseline.source, template.source,
                            host.folder.baseline.source_name, template.source_name)
    ensure_version(host.store, host.folder.name, template, origin=origin,
                   parent_id=parent.id if parent else None, diff=diff,
                   session_id=host.session_id)
    version = Version(vid, template, origin, parent.id if parent else None, diff, report)
    note = f"validation: {report.status} ({report.note})" if report else ""
    host.record_review(version, "proposed", "agent", note)
    loop.detail["version_id"] = vid
    loop.detail["diff"] = diff
    host.events.publish(TemplateProposed(
        host.iteration, vid, version.parent_id, origin, version.text_sha256, diff,
        report.status if report else "not run", report.note if report else ""))
    return version


# -- review --------------------------------------------------------------------------------

def auto_approval_refusal(auto_approve: bool, allow_unverified: bool,
                          version: Version) -> str | None:
    """Why ``--auto-approve`` may not approve ``version``, or None.

    Correctness before approval: a generated (LLM or offline) template is auto-approved only
    when the validation gate verified it on a GPU (with a GPU, the gate decides), unless
    ``allow_unverified``. Curated templates (the folder's own, written by its author) are not
    held back.
    """
    if not auto_approve or allow_unverified or version.origin == "curated":
        return None
    status = version.validation.status if version.validation is not None else "not run"
    if status == "ok":
        return None
    return (f"auto-approve refused template version {version.id[:12]} ({version.origin}): "
            f"validation {status}"
            + (f" ({version.validation.note})" if version.validation is not None else "")
            + "; its correctness was not checked on a GPU. Approve it by hand, run on a GPU, "
              "or pass --allow-unverified")


def review_step(host: StepHost, loop: LoopState) -> LoopState:
    """``review``: the pending version's decision, asked for where none is recorded; the
    host pauses when no decision is available."""
    version = loop.pending
    assert version is not None
    decided = [r for r in host.reviews(version) if r.decision != "proposed"]
    if not decided:
        refusal = auto_approval_refusal(host.config.auto_approve,
                                        host.config.allow_unverified, version)
        if host.config.auto_approve and refusal is None:
            host.record_review(version, "approved", AUTO_REVIEWER,
                               "auto_approve=True was set explicitly")
        elif refusal is not None:
            loop.detail["auto_approve"] = {"refused": refusal}
        elif host.approve_callback is not None:
            answer = host.approve_callback(ReviewRequest(
                host.iteration, version.id, version.parent_id, version.origin,
                version.template, version.text_sha256, version.diff, version.validation))
            if answer is not None:
                host.record_review(version, "approved" if answer else "rejected",
                                   host.config.reviewer, "approve callback")
        if not [r for r in host.reviews(version) if r.decision != "proposed"]:
            loop.waiting = True
            host.reason = (f"{refusal}; " if refusal else "") + \
                f"waiting for review of template version {version.id}"
            loop.detail["review"] = {"decision": "pending", "version_id": version.id}
            host.store_iteration("review")
            host.events.publish(ReviewRequested(
                host.iteration, version.id, version.text_sha256, version.diff))
            return loop
    try:
        approval = require_approved(host.store, host.folder, version.template)
    except ReviewError as exc:
        loop.detail["review"] = {"decision": "rejected", "version_id": version.id,
                                     "message": exc.message}
        loop.pending = None
        if loop.current is None:
            host.finish(AgentState.DONE, f"template rejected: {exc.message}")
            return loop
        host.end_iteration("review", "proposal rejected by the reviewer", exc.message)
        host.enter(AgentState.PLAN)
        return loop
    loop.detail["review"] = {"decision": "approved", "version_id": version.id,
                                 "reviewer": approval.by, "template_key": approval.key}
    loop.current, loop.pending = version, None
    loop.version_best = None
    host.enter(AgentState.TUNE, version.id)
    return loop
