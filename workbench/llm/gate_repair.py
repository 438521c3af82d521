"""The offline templater's repair round: tighten constraints until the gate's sample passes.

The LLM repairs its own template from the failing configs (they reach it as problems);
a template with no LLM behind it is repaired here instead: :func:`space_gate.tighten`
turns the failing and passing configs of the gate into constraints (one-parameter rules
and relations between two parameters, such as ``BLOCK_X == TILE``), the proposal gets
them, and the gate runs again on a freshly seeded sample, at most ``rounds`` times.
:attr:`GatedProposal.notes` says which constraints were added and which of them are
relations. A template whose every non-default config failed is not repaired: the gate's
report refuses it with that reason (:attr:`GateReport.only_defaults_pass`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.core.hardware import DEVICES, DeviceSpec
from workbench.core.kernel_folder import KernelFolder
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Config
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate
from workbench.llm.space_gate import GateReport, relation_between, tighten
from workbench.llm.validation import (
    CompilerLike,
    CorrectnessCheck,
    ValidationReport,
    _known_names,
    validate_proposal,
)

__all__ = ["GatedProposal", "validate_and_tighten"]


@dataclass(frozen=True)
class GatedProposal:
    """The proposal after the repair rounds, its last report and what was added."""

    proposal: TemplateProposal
    template: KernelTemplate | None  # None unless the last report is ok / unverified
    report: ValidationReport
    added_constraints: tuple[str, ...]
    rounds: int
    added_relations: tuple[str, ...] = ()  # those of added_constraints relating two params

    @property
    def notes(self) -> list[str]:
        """What the repair did, one line per added constraint (empty when nothing)."""
        lines = []
        for text in self.added_constraints:
            what = ("a relation between two parameters" if text in self.added_relations
                    else "a one-parameter constraint")
            lines.append(f"gate repair added {text} ({what}, learnt from the configs that "
                         "failed and passed)")
        if self.report.gate is not None and self.report.gate.only_defaults_pass:
            lines.append("gate repair: not attempted, "
                         + self.report.gate.only_defaults_reason())
        return lines


def _rules_at_another_shape(space: SearchSpace, bad: Sequence[Config], found: Sequence[str],
                            gate: GateReport, shape: str, dtype: str) -> list[str]:
    """Rules for the configs that failed at one of the gate's other shapes and that the
    rules ``found`` so far let through. An extreme that failed there, one parameter moved
    from the defaults that passed there, excludes that value (``P != v``): the shape's runs
    say nothing else (a relation fitted to the check shape's passes, such as ``FAST_MATH <=
    MIN_BLOCKS_PER_SM`` for pendulum_settle's FAST_MATH wrong at its large shape, kept most
    of the value's configs, wrong there too). The rest: keeping every config that passed
    anywhere where a rule can, else only those that passed at that shape (a config that
    passed at the check shape is then given up)."""
    ruled = SearchSpace(space.params, [*space.constraints, *found], space.env)
    left = [c for c in bad if ruled.rejection(c) is None]
    if not left:
        return []
    rules = _moved_values(left, gate.default_config, gate.passing_at(shape, dtype))
    ruled = SearchSpace(space.params, [*space.constraints, *found, *rules], space.env)
    left = [c for c in left if ruled.rejection(c) is None]
    if not left:
        return rules
    more, unexplained = tighten(space, left, [*gate.passing_at(shape, dtype),
                                              *gate.passing_configs(dtype)])
    if unexplained:
        more, _ = tighten(space, left, gate.passing_at(shape, dtype),
                          prefer=gate.passing_configs(dtype))
    return [*rules, *more]


def _moved_values(bad: Sequence[Config], defaults: Config | None,
                  passed: Sequence[Config]) -> list[str]:
    """``P != v`` for each failing config that is the passing defaults with one parameter
    ``P`` moved to ``v``."""
    if defaults is None or defaults not in passed:
        return []
    rules: list[str] = []
    for config in bad:
        moved = [k for k in defaults if config.get(k) != defaults[k]]
        if len(moved) == 1:
            v = config[moved[0]]
            rule = f"{moved[0]} != {int(v) if isinstance(v, bool) else v}"
            rules += [rule] if rule not in rules else []
    return rules


def validate_and_tighten(proposal: TemplateProposal, folder: KernelFolder, *,
                         device: DeviceSpec | None = None, compiler: CompilerLike | None = None,
                         correctness: CorrectnessCheck | None = None,
                         rounds: int = 3) -> GatedProposal:
    """Validate; while only the gate's correctness fails, add constraints that exclude the
    failing configs and validate again (the gate draws a new sample each round)."""
    spec = device or DEVICES["h100_sxm"]
    entry = folder.template.entry
    report = validate_proposal(proposal, folder, device=spec, compiler=compiler,
                               correctness=correctness)
    added: list[str] = []
    relations: list[str] = []
    done = 0
    for round_index in range(1, rounds + 1):
        gate = report.gate
        if report.ok or gate is None or not gate.failures \
                or report.checks() - {"correctness", "launch"}:
            break
        template = proposal.to_template(name=folder.name, entry=entry,
                                        known_names=_known_names(folder, spec))
        if any(f.config == template.default_config() for f in gate.failures):
            break  # wrong at its own defaults: no constraint can repair that
        if gate.only_defaults_pass:
            break  # refused (validation says why): a space of its defaults is no template
        new: list[str] = []
        for dtype in gate.dtypes:
            # per shape: what failed there against what passed there (a config that passed
            # at the check shape may be one the rule for another shape must exclude)
            for shape in (folder.check_shape, *gate.other_shapes):
                bad = [f.config for f in gate.failures
                       if f.dtype == dtype and f.shape == shape]
                if not bad:
                    continue
                space = template.space(folder.env(shape, dtype, spec))
                if shape == folder.check_shape:
                    rules, _ = tighten(space, bad, gate.passing_configs(dtype))
                else:
                    rules = _rules_at_another_shape(space, bad, new, gate, shape, dtype)
                fresh = [r for r in rules if r not in new and r not in proposal.constraints]
                new += fresh
                relations += [r for r in fresh if relation_between(r, space) is not None]
        if not new:
            break
        added += new
        proposal = proposal.model_copy(update={"constraints": [*proposal.constraints, *new]})
        report = validate_proposal(proposal, folder, device=spec, compiler=compiler,
                                   correctness=correctness, gate_seed=round_index)
        done = round_index
    final = (proposal.to_template(name=folder.name, entry=entry,
                                  known_names=_known_names(folder, spec))
             if report.ok else None)
    return GatedProposal(proposal, final, report, tuple(added), done, tuple(relations))
