"""Measuring under cache conditions: the settings of each condition and the confirmation
round that re-measures a search's finalists under all of them.

The conditions and the pick rule are pure (:mod:`workbench.core.conditions`); here they
become what the GPU worker does (:func:`timing_of`) and runner calls: every runner measures
under a condition with ``measure(candidates, condition=...)`` and
``baseline(shape, dtype, condition=...)``; one that cannot (a replay: its recording holds
one condition) raises :class:`ConditionUnavailable` before any result, and
:func:`conditions_unmet` says so in one sentence.

Rounds, as in :func:`workbench.engine.tuning.confirm_finalists`: round 1 measures the
baseline and every finalist under every condition and the rule picks; round 2 measures the
baseline and the pick again under every condition, and that is what is reported, so the
choice never sees the reported numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from workbench.core.conditions import (
    DEFAULT_CONDITIONS,
    ConditionTimes,
    Pick,
    PickRule,
    check_conditions,
    choose,
    format_condition_table,
)
from workbench.core.errors import DeviceError
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.engine.bench import BenchSettings

if TYPE_CHECKING:
    from workbench.engine.runner import Runner

#: ``extra`` key of a result a recording answered for a confirmation: measured again when
#: the recording was made, not now (a replay cannot measure again).
RECORDED_CONFIRMATION = "recorded_confirmation"

#: Launches captured in one CUDA graph for the "graph" condition (one repetition).
GRAPH_LAUNCHES = 20


@dataclass(frozen=True)
class ConditionTiming:
    """What the GPU worker does under one cache condition."""

    flush: str | None        # how the L2 is evicted before each repetition: "read" (clean
                             # lines), "write" (zeroing: dirty lines) or None (hot cache)
    graph_launches: int = 0  # > 0: each repetition launches a CUDA graph of this many
                             # captured launches (no flush, time per launch)


def timing_of(condition: str) -> ConditionTiming:
    """How the worker times under ``condition`` (one of ``CONDITIONS``)."""
    check_conditions([condition])
    if condition in ("read", "write"):
        return ConditionTiming(flush=condition)
    if condition == "warm":
        return ConditionTiming(flush=None)
    return ConditionTiming(flush=None, graph_launches=GRAPH_LAUNCHES)


def condition_of(settings: BenchSettings) -> str:
    """The condition a search measures under: a read-flushed cold L2, or hot-cache mode."""
    return "read" if settings.flush_l2 else "warm"


class ConditionUnavailable(DeviceError):
    """A runner cannot measure under a cache condition: ``runner`` (its description),
    ``condition`` (asked), ``measurable`` (the conditions it can measure under), ``why``."""


def unavailable(runner: Runner, conditions: Sequence[str]) -> ConditionUnavailable | None:
    """Why ``runner`` cannot measure under one of ``conditions`` (None: it can under all).
    Asks the contract itself: ``measure([], condition=c)`` raises before any result."""
    for condition in check_conditions(conditions):
        try:
            list(runner.measure([], condition=condition))
        except ConditionUnavailable as exc:
            return exc
    return None


def conditions_unmet(runner: Runner, description: str, conditions: Sequence[str] | None,
                     rule: PickRule | None) -> str | None:
    """A sentence when a confirmation was asked to measure under cache conditions (more
    than the search's, or with a pick rule) and ``runner`` cannot: it then confirms under
    the search's condition only, with no condition table and no pick rule, and the report
    must say so rather than fall back silently. ``runner`` is the one that confirms (a
    cluster's one-device view), ``description`` what it measures with. None: nothing was
    asked that it cannot do."""
    if not asks_conditions(conditions, rule):
        return None
    if unavailable(runner, conditions or DEFAULT_CONDITIONS) is None:
        return None
    named = ", ".join(conditions) if conditions is not None else "the rule's"
    return (f"{description} cannot measure under cache conditions ({named} asked): the "
            f"finalists were not confirmed under them, so no condition table and no pick "
            f"rule ({(rule or PickRule()).describe()}) apply to this report")


def asks_conditions(conditions: Sequence[str] | None, rule: PickRule | None) -> bool:
    """Whether a confirmation was asked for more than the search's condition."""
    return (conditions is not None and tuple(conditions) != ("read",)) or rule is not None


@dataclass(frozen=True)
class ConditionConfirmation:
    """Round 1 (every finalist, every condition: the rule picks) and round 2 (the pick and
    the baseline measured again under every condition: what is reported)."""

    conditions: tuple[str, ...]
    selection: Pick                  # round 1
    reported: Pick                   # round 2: one finalist, the pick
    results: tuple[TrialResult, ...]  # every re-measurement; extra["condition"], ["round"]

    @property
    def config(self) -> Config:
        return self.selection.config

    @property
    def holds(self) -> bool:
        """The pick satisfies the rule's guard in the reported (round 2) measurements."""
        return self.reported.holds

    def result(self, condition: str, round_index: int = 2,
               config: Config | None = None) -> TrialResult | None:
        """The re-measurement of ``config`` (default: the pick; ``Config()`` for the
        baseline) under ``condition`` in ``round_index``."""
        want = self.config if config is None else config
        for r in self.results:
            if (r.extra.get("condition") == condition and r.extra.get("round") == round_index
                    and r.config == want and bool(r.extra.get("is_baseline")) == (not want)):
                return r
        return None

    def summary(self) -> str:
        return "\n".join([
            f"  cache conditions, round 1 (every finalist; rule: "
            f"{self.selection.rule.describe()}):",
            format_condition_table(self.selection),
            "  round 2 (the pick and the baseline measured again; reported):",
            format_condition_table(self.reported),
            self.reported.summary()])


def _tagged(result: TrialResult, condition: str, round_index: int,
            is_baseline: bool) -> TrialResult:
    extra = dict(result.extra or {})
    extra.update(condition=condition, round=round_index, is_baseline=is_baseline)
    return replace(result, extra=extra)


def _round(runner: Runner, configs: Sequence[Config], shape: str, dtype: str,
           conditions: Sequence[str], round_index: int,
           on_result: Callable[[int, TrialResult], None] | None,
           ) -> tuple[ConditionTimes, list[ConditionTimes], list[TrialResult]]:
    """Baseline and ``configs`` under each condition, condition by condition."""
    kept: list[TrialResult] = []
    base: dict[str, float] = {}
    per: dict[Config, dict[str, float]] = {c: {} for c in configs}
    candidates = [Candidate(c, shape, dtype) for c in configs]
    for condition in conditions:
        measured = [_tagged(runner.baseline(shape, dtype, condition=condition), condition,
                            round_index, True)]
        measured += [_tagged(r, condition, round_index, False)
                     for r in runner.measure(candidates, condition=condition)]
        for r in measured:
            kept.append(r)
            if on_result is not None and not r.extra.get("is_baseline"):
                on_result(round_index, r)  # configs only: a store keys them by template
            if r.status is not Status.OK or r.timing is None:
                continue
            if r.extra.get("is_baseline"):
                base[condition] = r.timing.median_us
            elif r.config in per:
                per[r.config][condition] = r.timing.median_us
    rows = [ConditionTimes(label=_label(c), config=c, median_us=per[c]) for c in configs]
    return ConditionTimes(label="baseline", config=None, median_us=base), rows, kept


def _label(config: Config) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def confirm_under_conditions(runner: Runner, finalists: Sequence[TrialResult],
                             conditions: Sequence[str], rule: PickRule | None = None, *,
                             on_result: Callable[[int, TrialResult], None] | None = None,
                             twins: Sequence[Config] = (),
                             ) -> ConditionConfirmation | str:
    """Round 1 and round 2 (module docstring) for ``finalists`` (one shape and dtype) and
    ``twins`` (configs the search could not rank, e.g. launch-attribute twins of the
    finalists: :meth:`KernelTemplate.launch_twins`), which join round 1.

    Returns the confirmation, or a sentence saying why there is none."""
    conds = check_conditions(conditions)
    rule = rule or PickRule()
    if not finalists:
        return "no finalists"
    shape, dtype = finalists[0].shape, finalists[0].dtype
    configs = list(dict.fromkeys([*(r.config for r in finalists), *twins]))
    base1, rows1, kept1 = _round(runner, configs, shape, dtype, conds, 1, on_result)
    if not base1.median_us:
        return "the baseline failed under every condition"
    timed = [t for t in rows1 if t.median_us]
    if not timed:
        return "no finalist passed verification again"
    selection = choose(timed, base1, conds, rule)
    base2, rows2, kept2 = _round(runner, [selection.config], shape, dtype, conds, 2, on_result)
    if not base2.median_us or not rows2[0].median_us:
        return "the pick or the baseline failed its round-2 measurement"
    reported = choose(rows2, base2, conds, rule)
    return ConditionConfirmation(conditions=conds, selection=selection, reported=reported,
                                 results=tuple(kept1 + kept2))
