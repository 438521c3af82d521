"""The agent's proposing steps: the plan's text (from the LLM or offline), ``generate``
(LLM proposal with validation and one repair round, or the offline templater, each new
version stored with its parent and diff) and ``review`` (a human's approval of the exact
text, unless ``auto_approve=True`` was chosen explicitly).

These are functions of the :class:`~workbench.agent.machine.AgentMachine` they step; the
machine owns the state and decides the transitions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from workbench.agent.context import offline_plan, space_summary
from workbench.agent.events import ProposalRejected, ReviewRequested, TemplateProposed
from workbench.agent.measure import measured_configs, measurement_context, space_of
from workbench.agent.records import AUTO_REVIEWER, AgentState, ReviewRequest
from workbench.agent.runners import is_live, is_runner
from workbench.core.errors import ReviewError
from workbench.core.records import Candidate, Config, TrialResult
from workbench.core.template import KernelTemplate
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
from workbench.store.base import TemplateVersion

if TYPE_CHECKING:
    from workbench.agent.machine import AgentMachine
    from workbench.llm.client import LLMClient


@dataclass(frozen=True)
class Version:
    """One stored template version as the machine holds it."""

    id: str
    template: KernelTemplate
    origin: str
    parent_id: str | None
    diff: str
    validation: ValidationReport | None

    @property
    def text_sha256(self) -> str:
        return template_sha256(self.template)


def _report_dict(report: ValidationReport | None) -> dict[str, Any]:
    if report is None:
        return {"status": "not run"}
    return {"status": report.status, "note": report.note, "problems": report.messages(),
            "checks_passed": list(report.checks_passed),
            "checks_skipped": list(report.checks_skipped)}


# -- plan ----------------------------------------------------------------------------------

def plan_offline(machine: AgentMachine) -> Plan:
    """The deterministic plan for the current version, without an LLM."""
    assert machine._current is not None
    limit = machine.config.budget.max_evaluations or 8
    return offline_plan(space_of(machine, machine._current.template),
                        measured_configs(machine, machine._current), machine._version_best,
                        limit)


def plan_with_llm(machine: AgentMachine) -> Plan:
    """The LLM's plan for the current version, from the hardware-aware context."""
    assert machine._current is not None and machine.llm is not None
    template = machine._current.template
    summary = space_summary(space_of(machine, template),
                            len(measured_configs(machine, machine._current)))
    messages = plan_messages(KernelBrief.from_folder(machine.folder),
                             measurement_context(machine),
                             TemplateProposal.from_template(template),
                             space_summary=summary)
    return machine.llm.complete(messages, Plan, purpose="plan")


# -- generate ------------------------------------------------------------------------------

def _record_attempt(machine: AgentMachine, attempt: ProposalAttempt) -> None:
    machine._detail.setdefault("attempts", []).append(
        {"round": attempt.round, "problems": list(attempt.problems),
         "raw_reply": attempt.raw_reply[:20000]})


def _correctness(machine: AgentMachine) -> Any:
    if not is_live(machine._runner_arg if is_runner(machine._runner_arg) else None):
        return None

    def check(template: KernelTemplate, config: Config, shape: str,
              dtype: str) -> TrialResult:
        runner = machine._runner_for(template)
        return next(iter(runner.measure([Candidate(config, shape, dtype)])))
    return check


def generate_step(machine: AgentMachine) -> None:
    """``generate``: a validated template version to review, or the reason there is none."""
    action = machine._plan.next_action if machine._plan else NextAction.NEW_TEMPLATE
    report: ValidationReport | None
    if machine._current is None and machine._initial_template is not None:
        template, origin = machine._initial_template, "curated"
        report = validate_proposal(TemplateProposal.from_template(template), machine.folder,
                                   device=machine.device, compiler=machine.compiler)
    elif machine.llm is not None:
        current = (TemplateProposal.from_template(machine._current.template)
                   if action is NextAction.REFINE_TEMPLATE and machine._current else None)
        outcome = propose_template(
            machine.folder, cast("LLMClient", machine.llm),
            context=measurement_context(machine), device=machine.device,
            compiler=machine.compiler, correctness=_correctness(machine), current=current,
            repair_rounds=1, on_attempt=lambda attempt: _record_attempt(machine, attempt))
        if outcome.template is None:
            problems = tuple(outcome.reasons)
            machine._detail["proposal"] = {"status": "failed", "problems": list(problems)}
            machine.events.publish(ProposalRejected(machine.iteration, problems))
            if machine._current is None:
                machine._finish(AgentState.FAILED, "no valid template: the proposal failed "
                                "validation after its repair round: " + "; ".join(problems))
                return
            machine._end_iteration("generate", f"{action.value}: proposal failed validation",
                                   "; ".join(problems)[:500])
            machine._enter(AgentState.PLAN)
            return
        template, origin, report = outcome.template, "llm", outcome.report
    else:
        made = offline_template(machine.folder)
        report = validate_proposal(made.proposal, machine.folder, device=machine.device,
                                   compiler=machine.compiler)
        template, origin = made.template, "offline"
    machine._detail["validation"] = _report_dict(report)
    if report is not None and not report.ok:
        machine._finish(AgentState.FAILED, f"the {origin} template fails validation: "
                        + "; ".join(report.messages()))
        return
    if machine._current is not None \
            and template_sha256(template) == machine._current.text_sha256:
        machine._detail["proposal"] = {"status": "unchanged"}
        machine._enter(AgentState.TUNE, "proposal identical to the current version")
        return
    machine._pending = store_version(machine, template, origin, report)
    machine._enter(AgentState.REVIEW, machine._pending.id)


def store_version(machine: AgentMachine, template: KernelTemplate, origin: str,
                  report: ValidationReport | None) -> Version:
    """Store ``template`` as a child of the current version, with its diff and the
    agent's ``proposed`` review."""
    version_id = uuid.uuid4().hex
    parent = machine._current
    if parent is not None:
        diff = unified_diff(template_text(parent.template), template_text(template),
                            f"version {parent.id[:12]}", f"version {version_id[:12]}")
    else:
        diff = unified_diff(machine.folder.baseline.source, template.source,
                            machine.folder.baseline.source_name, template.source_name)
    machine.store.add_template_version(TemplateVersion(
        id=version_id, kernel=machine.folder.name, source_text=template.source,
        source_sha256=template.source_sha256,
        params={p.name: p.to_dict() for p in template.params},
        constraints=tuple(c.text for c in template.constraints),
        launch=template.launch.to_dict(), origin=origin,
        parent_id=parent.id if parent else None, diff_vs_parent=diff,
        session_id=machine.session_id))
    version = Version(version_id, template, origin, parent.id if parent else None, diff,
                      report)
    note = f"validation: {report.status} ({report.note})" if report else ""
    machine._record_review(version, TextReview.make(template, Decision.PROPOSED, "agent",
                                                    note))
    machine._detail["version_id"] = version_id
    machine.events.publish(TemplateProposed(
        machine.iteration, version_id, version.parent_id, origin, version.text_sha256, diff,
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


def review_step(machine: AgentMachine) -> None:
    """``review``: the pending version's decision, asked for where none is recorded; the
    machine pauses when no decision is available."""
    version = machine._pending
    assert version is not None
    decided = [r for r in machine._reviews(version) if r.decision is not Decision.PROPOSED]
    if not decided:
        refusal = auto_approval_refusal(machine.config.auto_approve,
                                        machine.config.allow_unverified, version)
        if machine.config.auto_approve and refusal is None:
            machine._record_review(version, TextReview.make(
                version.template, Decision.APPROVED, AUTO_REVIEWER,
                "auto_approve=True was set explicitly"))
        elif refusal is not None:
            machine._detail["auto_approve"] = {"refused": refusal}
        elif machine._approve is not None:
            answer = machine._approve(ReviewRequest(
                machine.iteration, version.id, version.parent_id, version.origin,
                version.template, version.text_sha256, version.diff, version.validation))
            if isinstance(answer, TextReview):
                machine._record_review(version, answer)
            elif answer is not None:
                decision = Decision.APPROVED if answer else Decision.REJECTED
                machine._record_review(version, TextReview.make(
                    version.template, decision, machine.config.reviewer, "approve callback"))
        if not [r for r in machine._reviews(version) if r.decision is not Decision.PROPOSED]:
            machine._waiting = True
            machine.reason = (f"{refusal}; " if refusal else "") + \
                f"waiting for review of template version {version.id}"
            machine._detail["review"] = {"decision": "pending", "version_id": version.id}
            machine._store_iteration("review")
            machine.events.publish(ReviewRequested(
                machine.iteration, version.id, version.text_sha256, version.diff))
            return
    try:
        approval = require_approved(version.template, machine._reviews(version))
    except ReviewError as exc:
        machine._detail["review"] = {"decision": "rejected", "version_id": version.id,
                                     "message": exc.message}
        machine._pending = None
        if machine._current is None:
            machine._finish(AgentState.DONE, f"template rejected: {exc.message}")
            return
        machine._end_iteration("review", "proposal rejected by the reviewer", exc.message)
        machine._enter(AgentState.PLAN)
        return
    assert approval is not None
    machine._detail["review"] = {"decision": "approved", "version_id": version.id,
                                 "reviewer": approval.reviewer,
                                 "template_sha256": approval.template_sha256}
    machine._current, machine._pending = version, None
    machine._version_best = None
    machine._enter(AgentState.TUNE, version.id)
