"""No family writes a copy of an ``auto`` local (``auto acc[TM][TN];``): one that would is
undone and refused with the local's line.

C++ deduces ``auto`` for one object from its initialiser; ``auto x[N]`` (nvcc: "auto type
cannot appear in top-level array type") and ``auto x;`` are not C++. :func:`.auto_types.
typed_autos` declares every ``auto`` local whose initialiser tells its type with that type
before the analysis, so the families copy typed locals. What it leaves (a template's ``T``,
a typedef or struct of the file, ``pow(x, 2)`` where an overload decides) a family that
keeps one copy per item, per tile element, per output or per tap (regtile's accumulators,
conv's and centre's outputs, stencil's centre, the items of the block path) would write as
an ``auto`` array. :class:`AutoGuard` runs each such family and, where the kernel still has
an ``auto`` local, reads the text it renders before and after: a new ``auto NAME[`` or
uninitialised ``auto NAME;`` undoes the family's edits, parameters, constraints and launch changes and
notes the refusal ("`auto acc` at line 12: its type cannot be told from `T(0)`; write
the type"), so the next family is tried as if this one had refused. A kernel whose locals
are all typed (every corpus kernel) runs each family as before, unread.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from workbench.core.errors import TemplateError
from workbench.templater.analysis import text, walk
from workbench.templater.plan import Plan
from workbench.templater.records import Finding, LiftedParameter
from workbench.templater.rewrite import Edit

#: a copy of a local declared ``auto`` that is not C++: an array, or no initialiser
_NOT_CXX = re.compile(r"\bauto\s+([A-Za-z_]\w*)\s*(?:\[|;)")


@dataclass(frozen=True)
class AutoLocal:
    """A local of the kernel still declared ``auto`` after typed_autos."""

    name: str
    line: int
    value: str  # the initialiser as written ('' where there is none)

    def refusal(self, family: str, written: str) -> str:
        told = f" from `{self.value[:60]}`" if self.value else ""
        return (f"`auto {self.name}` at line {self.line}: its type cannot be told{told}; "
                f"write the type ({family} would declare `auto {written}[..]`, one copy per "
                "item/output, which is not C++)")


def auto_locals(body: Node) -> list[AutoLocal]:
    """The identifiers ``body`` declares with the placeholder ``auto`` (lambdas included:
    a family copying one is refused alike)."""
    out = []
    for decl in walk(body):
        typ = decl.child_by_field_name("type") if decl.type == "declaration" else None
        if typ is None or typ.type != "placeholder_type_specifier":
            continue
        for d in decl.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if inner is not None and inner.type == "identifier":
                out.append(AutoLocal(text(inner), decl.start_point.row + 1,
                                     "" if value is None else " ".join(text(value).split())))
    return out


@dataclass
class _Saved:
    """What a family may change on the plan, as it was before it ran."""

    edits: list[Edit]
    params: dict[str, LiftedParameter]
    constraints: list[str]
    findings: list[Finding]
    helpers: list[str]
    grid: list[str]
    block: list[str]
    launch_bounds: str | None

    @classmethod
    def of(cls, plan: Plan) -> _Saved:
        return cls(list(plan.rw.edits), dict(plan.params), list(plan.constraints),
                   list(plan.findings), list(plan.helpers), list(plan.grid), list(plan.block),
                   plan.launch_bounds)

    def restore(self, plan: Plan) -> None:
        plan.rw.edits = self.edits
        plan.params, plan.constraints, plan.findings = self.params, self.constraints, \
            self.findings
        plan.helpers, plan.grid, plan.block = self.helpers, self.grid, self.block
        plan.launch_bounds = self.launch_bounds


class AutoGuard:
    """Runs families on ``plan`` and refuses any whose text copies an ``auto`` local."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.autos = auto_locals(plan.body)
        self.before = set(_NOT_CXX.findall(plan.source.data.decode()))

    def __call__(self, family: Callable[..., Any], *args: Any) -> Any:
        """``family(plan, *args)``; False (its edits undone, its refusal noted) where the
        text it renders declares a new ``auto NAME[`` or ``auto NAME;``."""
        if not self.autos:
            return family(self.plan, *args)
        saved = _Saved.of(self.plan)
        before = set(_NOT_CXX.findall(self.plan.rw.render()))
        result = family(self.plan, *args)
        written = self.copied(self.plan.rw.render(), before)
        if written is None:
            return result
        saved.restore(self.plan)
        name = family.__name__.removeprefix("lift_").removeprefix("apply_")
        local = self.local(written)
        self.plan.findings.append(Finding(name, False, local.refusal(name, written), local.line))
        return False

    def check(self, rendered: str) -> None:
        """Raise TemplateError where the whole lift still declares a copy of an ``auto``
        local (a pass no family guard covers)."""
        written = self.copied(rendered, self.before) if self.autos else None
        if written is not None:
            raise TemplateError(self.local(written).refusal("the lift", written),
                                line=self.local(written).line)

    @staticmethod
    def copied(rendered: str, before: set[str]) -> str | None:
        """The first name ``rendered`` declares ``auto NAME[`` or ``auto NAME;`` that
        ``before`` did not."""
        return next((n for n in _NOT_CXX.findall(rendered) if n not in before), None)

    def local(self, written: str) -> AutoLocal:
        """The ``auto`` local ``written`` copies: its name, else one whose name it holds
        (``wb_acc`` of ``acc``, ``acc_2``), else the first."""
        exact = [a for a in self.autos if a.name == written]
        held = sorted((a for a in self.autos if a.name in written), key=lambda a: -len(a.name))
        return (exact or held or self.autos)[0]
