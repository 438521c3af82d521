"""Which runner measures which template version, and the provenance that keys its trials.

A runner measures one template (``LocalRunner(folder, template)``), so each new version
needs a runner for it. ``run_agent`` accepts either a *factory* ``template -> Runner`` or a
runner instance, from which a runner for another template is derived here:

a :class:`~workbench.engine.capabilities.TemplateBound` runner makes its sibling
(``for_template``): a :class:`~workbench.engine.runner.LocalRunner` one with the same
settings, compiler and seed (a new isolated GPU worker: LLM-written CUDA only ever runs
there); a :class:`~workbench.engine.replay.ReplayRunner` one over the same recording (it
answers only for the template the recording holds: another text, parameter names, entry or
launch rules are refused with a RecordingError before anything is measured, so the agent's
step fails cleanly instead of storing another template's numbers); the tests'
SyntheticRunner one. Any other runner is used only for the template it already measures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from workbench.core.errors import WorkbenchError
from workbench.core.template import KernelTemplate
from workbench.engine.capabilities import TemplateBound
from workbench.engine.runner import LocalRunner, Runner
from workbench.store.base import provenance_for

RunnerFactory = Callable[[KernelTemplate], Runner]

__all__ = ["AgentRunnerError", "RunnerFactory", "derive_runner", "is_live", "is_runner",
           "provenance_for"]


class AgentRunnerError(WorkbenchError):
    """No runner can measure a template version (``template_sha256``, ``runner``)."""


def is_runner(obj: object) -> bool:
    """Whether ``obj`` is a runner (rather than a factory)."""
    return isinstance(obj, Runner)


def is_live(runner: object) -> bool:
    """Whether ``runner`` measures on a real GPU here (only then is a profiler useful)."""
    return isinstance(runner, LocalRunner)


def derive_runner(runner: Runner | RunnerFactory, template: KernelTemplate) -> tuple[Runner, bool]:
    """A runner for ``template`` and whether the caller owns it (must close it)."""
    if not is_runner(runner):
        return runner(template), True  # type: ignore[operator]
    if isinstance(runner, TemplateBound):
        if runner.template == template:
            return cast(Runner, runner), False
        return cast(Runner, runner.for_template(template)), True
    current = getattr(runner, "template", None)  # bound to one, with no sibling to make
    if not isinstance(current, KernelTemplate) or current == template:
        return cast(Runner, runner), False
    raise AgentRunnerError(
        f"{type(runner).__name__} measures one template and cannot measure template "
        f"{template.source_sha256[:12]}; pass a factory `template -> Runner` to run_agent",
        template_sha256=template.source_sha256, runner=type(runner).__name__)
