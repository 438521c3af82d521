"""The offline templater's records: lifted parameters, findings, the lifted source, the result."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.core.proposal import TemplateProposal
from workbench.core.records import Value
from workbench.core.template import KernelTemplate


@dataclass(frozen=True)
class Finding:
    """One transform considered: applied, or not with the reason (and the line it is about)."""

    transform: str
    applied: bool
    reason: str
    line: int = 0

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        verdict = "applied" if self.applied else "not applied"
        return f"{self.transform}: {verdict}: {self.reason}{where}"


@dataclass(frozen=True)
class LiftedParameter:
    """One lifted constant: the parameter, its dict form and where it came from."""

    name: str
    spec: Mapping[str, Any]  # parameter_from_dict form
    origin: str  # e.g. "baseline.cu:21: constexpr int kVec = 16 / ELEM_BYTES;"


@dataclass(frozen=True)
class LiftedSource:
    """The rewritten source with its parameters, constraints and launch rules (all text)."""

    source: str
    params: tuple[LiftedParameter, ...]
    constraints: tuple[str, ...]
    grid: tuple[str, ...]
    block: tuple[str, ...]
    smem_bytes: str
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()  # the semantic pass: each transform, applied or why not

    @property
    def defaults(self) -> dict[str, Value]:
        return {p.name: p.spec["default"] for p in self.params}


@dataclass(frozen=True)
class TemplaterResult:
    """A template made offline, its proposal form, and the unified diff from the baseline."""

    template: KernelTemplate
    proposal: TemplateProposal
    diff: str
    lifted: LiftedSource
    notes: tuple[str, ...] = field(default=())


def unified_diff(before: str, after: str, before_name: str = "baseline.cu",
                 after_name: str = "template.cu") -> str:
    """The unified diff text from ``before`` to ``after`` (a template's change, as reviewed)."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        fromfile=before_name, tofile=after_name))
