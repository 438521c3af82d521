"""``plan_next``: ask the model what to do next and vet the configs it wants measured.

The model's configs enter the search only as enqueued candidates (``Study.enqueue_trial``
style), and only after they are checked here: every parameter named, every value allowed,
every constraint satisfied for each shape/dtype the plan is about. Rejected configs are
kept with their reasons so the panel can show them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.core.errors import ParameterError, TemplateError
from workbench.core.hardware import DeviceSpec, default_device
from workbench.core.kernel_folder import KernelFolder
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Config
from workbench.core.template import KernelTemplate
from workbench.llm.client import ChatClient
from workbench.llm.prompts import KernelBrief, PromptContext, plan_messages
from workbench.llm.schemas import Plan


@dataclass(frozen=True)
class RejectedConfig:
    """A config the model asked for that cannot be measured, and why."""

    config: Mapping[str, object]
    reason: str


@dataclass(frozen=True)
class PlanOutcome:
    """The validated plan, the configs to enqueue, and the ones refused."""

    plan: Plan
    configs: tuple[Config, ...]
    rejected: tuple[RejectedConfig, ...]
    raw_reply: str


def _scopes(folder: KernelFolder, context: PromptContext) -> list[tuple[str, str]]:
    scopes = [(m.shape, m.dtype) for m in context.measurements]
    return scopes or [(shape, folder.dtypes[0]) for shape in folder.shapes]


def space_summary(folder: KernelFolder, template: KernelTemplate,
                  scopes: Sequence[tuple[str, str]], device: DeviceSpec | None = None) -> str:
    """One line per (shape, dtype): feasible / raw size and what each constraint rejects."""
    lines = []
    for shape, dtype in scopes:
        space = template.space(folder.env(shape, dtype, device))
        rejects = ", ".join(f"`{c}` rejects {n}" for c, n in space.rejections_by_constraint().items()
                            if n) or "no constraint rejects any"
        lines.append(f"- {shape}/{dtype}: {space.size} feasible of {space.raw_size} raw; {rejects}")
    return "\n".join(lines)


def vet_configs(folder: KernelFolder, template: KernelTemplate,
                configs: Sequence[Mapping[str, object]], scopes: Sequence[tuple[str, str]],
                device: DeviceSpec | None = None) -> tuple[list[Config], list[RejectedConfig]]:
    """Split ``configs`` into measurable ones (deduplicated, in order) and refused ones."""
    spaces = [(f"{s}/{d}", template.space(folder.env(s, d, device))) for s, d in scopes]
    good: list[Config] = []
    bad: list[RejectedConfig] = []
    for raw in configs:
        try:
            config = template.validate_config(raw)  # type: ignore[arg-type]
        except (TemplateError, ParameterError) as exc:
            bad.append(RejectedConfig(dict(raw), exc.message))
            continue
        reason = next((f"{where}: {why}" for where, space in spaces
                       if (why := space.rejection(config)) is not None), None)
        if reason is not None:
            bad.append(RejectedConfig(dict(raw), reason))
        elif config not in good:
            good.append(config)
    return good, bad


def plan_next(folder: KernelFolder, client: ChatClient, template: KernelTemplate, *,
              context: PromptContext | None = None, guidance: str = "") -> PlanOutcome:
    """Ask for a :class:`Plan` about ``template`` given the measurements in ``context``.

    Raises the client's LLMError subclasses when no usable plan comes back.
    """
    ctx = context or PromptContext(device=default_device())
    scopes = _scopes(folder, ctx)
    messages = plan_messages(KernelBrief.from_folder(folder), ctx,
                             TemplateProposal.from_template(template),
                             space_summary=space_summary(folder, template, scopes, ctx.device),
                             guidance=guidance)
    reply = client.chat(messages, schema=Plan, purpose="plan")
    plan = client.parse_reply(reply.text, Plan)
    good, bad = vet_configs(folder, template, plan.configs_to_enqueue, scopes, ctx.device)
    return PlanOutcome(plan=plan, configs=tuple(good), rejected=tuple(bad), raw_reply=reply.text)
