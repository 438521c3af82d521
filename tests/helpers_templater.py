"""Shared pieces of the offline templater's tests: the template a lift describes."""

from __future__ import annotations

from workbench.core.params import parameter_from_dict
from workbench.core.template import KernelTemplate
from workbench.llm.templater import LiftedSource


def lifted_template(lifted: LiftedSource, entry: str = "k") -> KernelTemplate:
    """The kernel template ``lifted`` describes, named after its entry point ``entry``."""
    return KernelTemplate.build(
        name=entry, source=lifted.source, entry=entry,
        params=[parameter_from_dict(p.name, dict(p.spec)) for p in lifted.params],
        constraints=list(lifted.constraints), grid=list(lifted.grid), block=list(lifted.block))
