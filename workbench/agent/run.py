"""The agent's public entry points: :func:`run_agent` and :func:`propose_only`."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from workbench.agent.machine import AgentMachine
from workbench.agent.records import AgentConfig, AgentOutcome, ApproveCallback
from workbench.agent.runners import RunnerFactory
from workbench.core.errors import CompilerNotFoundError
from workbench.core.events import EventBus
from workbench.core.hardware import DeviceSpec, default_device
from workbench.core.kernel_folder import KernelFolder
from workbench.core.proposal import TemplateProposal
from workbench.core.template import KernelTemplate
from workbench.engine.compiler import Compiler
from workbench.engine.runner import Runner
from workbench.llm.gate_repair import validate_and_tighten
from workbench.llm.validation import (
    CorrectnessCheck,
    ProposalAttempt,
    ValidationReport,
    propose_template,
)
from workbench.search.budget import Budget
from workbench.store.base import Store
from workbench.templater import offline_template

if TYPE_CHECKING:
    from workbench.llm.client import LLMClient


def run_agent(folder: KernelFolder, *, runner: Runner | RunnerFactory, store: Store,
              client: LLMClient | None = None, iterations: int = 3, llm_calls: int = 12,
              auto_approve: bool = False, allow_unverified: bool = False,
              approve: ApproveCallback | None = None,
              strategy: str = "guided", budget: Budget | int = 16, confirm: int = 5,
              shape: str | None = None,
              dtype: str | None = None, events: EventBus | None = None, seed: int = 0,
              compiler: Compiler | None = None,
              initial_template: KernelTemplate | None = None,
              session_id: str | None = None, widen: int = 0) -> AgentOutcome:
    """Run plan -> generate -> review -> tune -> test until a budget, a stop plan, a
    failure, or a template that waits for review (see :mod:`workbench.agent.machine`).

    ``runner`` is a Runner (a runner for each new template version is derived from it) or
    a factory ``template -> Runner``. ``client=None`` uses the offline templater and the
    deterministic offline plan. ``budget`` (evaluations, or a Budget) bounds each tune
    step; ``confirm`` is its confirmation of the k fastest configs (0: none); ``widen``
    rounds of range widening follow each tune step where its fastest configs sit on a
    range edge (as ``workbench tune --widen``). ``initial_template`` (e.g. ``folder.template``) starts from a curated template
    instead of generating one. For the pause-for-review flow use :class:`AgentMachine`.
    ``auto_approve`` approves only templates the gate verified (on a GPU), curated ones, or,
    with ``allow_unverified=True``, any that passed every check it could run.
    """
    config = AgentConfig(iterations=iterations, llm_calls=llm_calls, auto_approve=auto_approve,
                         allow_unverified=allow_unverified,
                         strategy=strategy,
                         budget=budget if isinstance(budget, Budget)
                         else Budget(max_evaluations=budget), confirm=confirm,
                         shape=shape, dtype=dtype, seed=seed, widen=widen)
    machine = AgentMachine(folder, runner=runner, store=store, config=config, client=client,
                           approve=approve, events=events, session_id=session_id,
                           compiler=compiler, initial_template=initial_template)
    try:
        return machine.run()
    finally:
        if machine.state.value in ("done", "failed"):
            machine.close()


class Proposed(NamedTuple):
    """What ``workbench propose`` shows: the template (or the failed proposal), the diff
    from the baseline, the validation report, where it came from and every attempt."""

    template: KernelTemplate | TemplateProposal | None
    diff: str
    report: ValidationReport | None
    origin: str  # llm | offline
    attempts: tuple[ProposalAttempt, ...] = ()
    notes: tuple[str, ...] = ()  # the offline templater: each transform, applied or why not


def propose_only(folder: KernelFolder, client: LLMClient | None = None, *,
                 device: DeviceSpec | None = None,
                 compiler: Compiler | None = None,
                 correctness: CorrectnessCheck | None = None) -> Proposed:
    """One template proposal with validation and repair (the LLM's repair round, or the
    offline templater's constraint tightening); no tuning.

    ``compiler=None`` uses nvcc when it is installed (else the compile check is skipped);
    ``correctness`` runs the space-wide gate on a GPU (None: unverified).
    """
    spec = device or default_device()
    if compiler is None:
        try:
            compiler = Compiler(spec.arch, include_dir=folder.path)
        except CompilerNotFoundError:
            compiler = None
    if client is None:
        made = offline_template(folder)
        gated = validate_and_tighten(made.proposal, folder, device=spec, compiler=compiler,
                                     correctness=correctness)
        return Proposed(gated.template or gated.proposal, made.diff, gated.report, "offline",
                        notes=(*made.notes, *gated.notes))
    outcome = propose_template(folder, client, device=spec, compiler=compiler,
                               correctness=correctness, repair_rounds=1)
    shown: KernelTemplate | TemplateProposal | None = outcome.template or outcome.proposal
    return Proposed(shown, outcome.diff, outcome.report, "llm", outcome.attempts)


def parameter_table(template: KernelTemplate | TemplateProposal) -> str:
    """A plain-text table of the parameters (name, kind, values or range, default)."""
    proposal = (template if isinstance(template, TemplateProposal)
                else TemplateProposal.from_template(template))
    rows = [("parameter", "kind", "values", "default")]
    for p in proposal.parameters:
        if p.kind == "choice":
            values = ", ".join(str(v) for v in p.values or [])
        else:
            values = f"{p.min}..{p.max}" + (f" step {p.step}" if p.step else "")
        rows.append((p.name, p.kind, values, str(p.default)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if proposal.constraints:
        lines.append("constraints: " + "; ".join(proposal.constraints))
    return "\n".join(lines)
