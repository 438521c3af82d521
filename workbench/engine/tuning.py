"""The report of a tune: the best configs of one (kernel, shape, dtype), how they compare with
the baseline and with a device-to-device copy of the same bytes, and the confirmation.

:func:`workbench.search.tune.tune` (the one tune path under the API, CLI, panel and agent)
builds a :class:`TuneReport` with :func:`build_report` from the trials it reads back from
the store, so a resumed or re-launched search reports every stored trial.

The winner's curse: a search's best time is the minimum over hundreds of noisy medians, so
it is biased low and the ranking of near-ties is partly luck. With ``confirm=k`` a runner
that can measure again (``measure(candidates, condition=...)``) re-measures the
k fastest configs twice after the search: round 1 picks among them, round 2 measures the
pick once more, and the report's time, speedup and bandwidth come from round 2, a
measurement the choice never saw. A replay cannot measure again, so its report says so and
keeps the search's numbers; where its recording holds a confirmation of the search's best
config (measured again in a fresh worker after the sweep), the note gives that time beside
the search's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from workbench.core.cache_profile import L2Profile
from workbench.core.conditions import DEFAULT_CONDITIONS, PickRule, varied_finalists
from workbench.core.edges import RangeEdge, range_edges
from workbench.core.errors import WorkbenchError
from workbench.core.params import Choice
from workbench.core.picks import (
    SEARCH_BEST_RULE,
    SLOWER_THAN_BASELINE,
    ConfirmationMeasurement,
    PickRecord,
    fastest_ok,
    ranked_ok,
)
from workbench.core.records import Candidate, Config, Status, TrialResult
from workbench.core.template import KernelTemplate
from workbench.engine.bench import (
    CopyTiming,
    SpeedupInterval,
    speedup_from_timings,
    speedup_interval,
)
from workbench.engine.capabilities import Facts, ManyDevices
from workbench.engine.conditions import (
    RECORDED_CONFIRMATION,
    ConditionConfirmation,
    ConditionUnavailable,
    asks_conditions,
    conditions_unmet,
    confirm_under_conditions,
    unavailable,
)
from workbench.engine.runner import Runner


@dataclass(frozen=True)
class Confirmation:
    """The search's finalists measured again: round 1 chooses, round 2 is reported."""

    finalists: tuple[TrialResult, ...]   # the search's k fastest, fastest first
    selection: tuple[TrialResult, ...]   # round 1, in the finalists' order
    chosen: TrialResult                  # round 2 of the config round 1 found fastest
    # Under cache conditions: every condition's rounds, the rule's pick, and the baseline's
    # round-2 measurement under the headline condition (what the speedup divides).
    conditions: ConditionConfirmation | None = None
    baseline: TrialResult | None = None

    @property
    def search_median_us(self) -> float | None:
        """What the search measured for the chosen config."""
        for f in self.finalists:
            if f.config == self.chosen.config:
                return f.median_us
        return None

    def summary(self) -> str:
        if self.conditions is not None:
            return self.conditions.summary()
        picked = " ".join(f"{r.median_us:.2f}" if r.median_us else r.status.value
                          for r in self.selection)
        searched = self.search_median_us
        return (f"  confirmed: the top {len(self.finalists)} measured again "
                f"(round 1: {picked} us); chosen {dict(self.chosen.config)}: "
                f"{self.chosen.median_us or 0:.2f} us in round 2"
                + (f" (the search measured {searched:.2f} us)" if searched else ""))


@dataclass(frozen=True)
class TuneReport:
    """What a tune of one (kernel, shape, dtype) found, read back from the store.

    ``results`` holds every stored trial of the template version at this shape and dtype
    within the current space (resumed trials included); ``top`` its fastest ok trials;
    ``pick`` the config to use (the confirmed one where a confirmation ran)."""

    kernel: str
    shape: str
    dtype: str
    runner: str                            # the runner's description
    reason: str                            # why the search ended: budget, exhausted, ...
    results: tuple[TrialResult, ...]       # every stored trial (any status)
    top: tuple[TrialResult, ...]           # fastest ok results, fastest first
    measured_now: int                      # trials the runner measured in this call
    baseline: TrialResult | None
    speedup: SpeedupInterval | None        # baseline median / pick median, with a 95 % CI
    bandwidth_gb_per_s: float | None       # pick: roofline bytes / median time
    baseline_bandwidth_gb_per_s: float | None
    copy: CopyTiming | None                # a device copy of the same bytes, same method
    pct_of_copy: float | None              # pick bandwidth as % of the copy's bandwidth
    status_counts: dict[str, int] = field(default_factory=dict)
    confirmation: Confirmation | None = None  # None: not asked for, or the runner can't
    confirm_note: str = ""                    # why there is no confirmation, when asked
    notes: tuple[str, ...] = ()               # what could not be measured (copy, baseline)
    edges: tuple[RangeEdge, ...] = ()         # range edges the fastest configs sit on
    l2: L2Profile | None = None               # 2-D tiled kernels: the finalists' L2 hit rates
    # the template with the ranges widening rounds extended (None: nothing was widened)
    widened: KernelTemplate | None = field(default=None, compare=False)
    # the decision as stored and read back (None: not stored, e.g. build_report alone)
    stored_pick: PickRecord | None = None

    @property
    def finalists(self) -> tuple[TrialResult, ...]:
        """The finalists as last timed: the confirmation's round 1 (the search's k fastest
        measured again), else the search's fastest."""
        return self.confirmation.selection if self.confirmation is not None else self.top

    @property
    def best(self) -> TrialResult | None:
        """The search's fastest trial, as the search measured it."""
        return self.top[0] if self.top else None

    @property
    def confirmed(self) -> TrialResult | None:
        """The confirmed pick's second measurement (None without a confirmation)."""
        return self.confirmation.chosen if self.confirmation is not None else None

    @property
    def pick(self) -> TrialResult | None:
        """The config to use: the confirmed one where there is one, else the search's best
        (the measurement behind :attr:`stored_pick` when the tune stored it)."""
        return self.confirmed or self.best

    def answer(self) -> tuple[PickRecord | None, bool]:
        """The stored pick and whether it is a fallback (the search's best because no
        confirmation could run): what a view shows as this tune's answer."""
        pick = self.stored_pick
        return pick, (pick.is_fallback if pick is not None else True)

    @property
    def baseline_us(self) -> float | None:
        return self.baseline.median_us if self.baseline is not None else None

    @property
    def evaluated(self) -> int:
        """Measured (not pruned) trials, resumed ones included."""
        return sum(1 for r in self.results if r.status is not Status.PRUNED)

    def summary(self) -> str:
        """A few lines for a terminal or a log."""
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.status_counts.items()))
        lines = [f"{self.kernel} {self.shape}/{self.dtype} on {self.runner}: "
                 f"{len(self.results)} stored trials ({counts})"]
        if self.baseline is not None and self.baseline.timing:
            lines.append(f"  baseline  {self.baseline.timing.median_us:9.2f} us  "
                         f"{self.baseline_bandwidth_gb_per_s or 0:8.1f} GB/s")
        for r in self.top:
            hit = self.l2.hit_pct(r.config) if self.l2 is not None else None
            beside = f"  L2 hit {hit:5.1f} %" if hit is not None else ""
            lines.append(f"  {r.median_us or 0:9.2f} us  {r.bandwidth_gb_per_s or 0:8.1f} GB/s"
                         f"{beside}  {dict(r.config)}")
        if not self.top:
            lines.append("  no config verified and timed")
        if self.confirmation is not None:
            lines.append(self.confirmation.summary())
        elif self.confirm_note:
            lines.append(f"  not confirmed: {self.confirm_note}")
        if self.l2 is not None:
            lines.extend(f"  {line}" for line in self.l2.lines())
        for edge in self.edges:
            lines.append(f"  range edge: {edge.describe()} (`workbench tune --widen` "
                         f"extends it)")
        if self.speedup:
            lines.append(f"  speedup over baseline: {self.speedup}")
            if self.speedup.slower:
                lines.append(f"  warning: {SLOWER_THAN_BASELINE}")
        if self.copy is not None and self.pct_of_copy is not None:
            lines.append(f"  device copy of the same bytes: {self.copy.median_us:.2f} us "
                         f"({self.copy.bandwidth_gb_per_s:.1f} GB/s); the pick reaches "
                         f"{self.pct_of_copy:.1f} % of it")
        lines.extend(f"  note: {n}" for n in self.notes)
        if self.stored_pick is not None:
            lines.append(f"  stored pick: {self.stored_pick.describe()}")
        return "\n".join(lines)


def confirm_finalists(runner: Runner, finalists: Sequence[TrialResult], *,
                      on_result: Callable[[int, TrialResult], None] | None = None,
                      conditions: Sequence[str] | None = None, rule: PickRule | None = None,
                      twins: Sequence[Config] = (),
                      ) -> Confirmation | str:
    """Measure ``finalists`` twice more on ``runner``: round 1 chooses, round 2 reports.

    ``on_result(round_index, result)`` sees every re-measurement as it arrives (to store it).
    With ``conditions`` (cache conditions, :mod:`workbench.core.conditions`) each round
    measures under every condition and ``rule`` picks (default: best geometric mean, never
    slower than the baseline); the headline result is the pick's round-2 measurement under
    the rule's condition, or "read" (the search's) when the rule scores all of them.
    Returns the Confirmation, or a sentence saying why there is none (a runner that answers
    from memory or a recording, or no finalist passing round 1)."""
    runner = one_device(runner)
    if _under_conditions(runner, conditions, rule):
        return _confirm_conditions(runner, finalists, conditions or DEFAULT_CONDITIONS,
                                   rule, on_result, twins)
    def seen(round_index: int, result: TrialResult) -> TrialResult:
        if on_result is not None:
            on_result(round_index, result)
        return result

    if not finalists:
        return "no finalists"
    candidates = [Candidate(r.config, r.shape, r.dtype) for r in finalists]
    try:
        first = _measure_again(runner, candidates)
    except ConditionUnavailable as exc:
        return f"{runner.description} cannot measure again ({exc.message})"
    if any(r.extra.get(RECORDED_CONFIRMATION) for r in first):
        return (f"{runner.description} cannot measure again (it answers from its recording)"
                + _recorded_confirmation_note(finalists, first))
    by_config = {r.config: seen(1, r) for r in first}
    selection = tuple(by_config[c.config] for c in candidates if c.config in by_config)
    pick = fastest_ok(selection)
    if pick is None:
        return "no finalist passed verification again: " + ", ".join(
            f"{r.status.value} {r.reason}" for r in selection)[:300]
    again = [seen(2, r) for r in
             _measure_again(runner, [Candidate(pick.config, pick.shape, pick.dtype)])]
    if not again or again[0].status is not Status.OK or again[0].timing is None:
        why = f"{again[0].status.value} {again[0].reason}" if again else "no result"
        return f"the chosen config failed its second measurement: {why}"
    return Confirmation(finalists=tuple(finalists), selection=selection, chosen=again[0])


def one_device(runner: Runner) -> Runner:
    """The runner a confirmation measures on: a cluster's one pinned device (times that are
    compared with each other come from one device), else ``runner`` itself."""
    return cast(Runner, runner.one_device()) if isinstance(runner, ManyDevices) else runner


def _measure_again(runner: Runner, candidates: Sequence[Candidate]) -> list[TrialResult]:
    """``candidates`` measured afresh for a confirmation under the search's own condition,
    the way every confirmation measures (under ``WORKBENCH_NVRTC=all`` on nvcc's code)."""
    return list(runner.measure(candidates, condition=runner.search_condition))


def _under_conditions(runner: Runner, conditions: Sequence[str] | None,
                      rule: PickRule | None) -> bool:
    """Whether a confirmation on ``runner`` measures under several cache conditions."""
    return (asks_conditions(conditions, rule)
            and unavailable(runner, conditions or DEFAULT_CONDITIONS) is None)


def _confirm_conditions(runner: Runner, finalists: Sequence[TrialResult],
                        conditions: Sequence[str], rule: PickRule | None,
                        on_result: Callable[[int, TrialResult], None] | None,
                        twins: Sequence[Config] = (),
                        ) -> Confirmation | str:
    conds = tuple(conditions)
    if rule is not None and rule.condition is not None and rule.condition not in conds:
        conds = (*conds, rule.condition)
    got = confirm_under_conditions(runner, finalists, conds, rule, on_result=on_result,
                                   twins=twins)
    if isinstance(got, str):
        return got
    head = got.selection.rule.condition or ("read" if "read" in conds else conds[0])
    chosen = got.result(head, 2)
    base = got.result(head, 2, Config())
    if chosen is None or base is None:
        return f"no round-2 measurement under '{head}'"
    selection = tuple(r for r in (got.result(head, 1, f.config) for f in finalists)
                      if r is not None)
    return Confirmation(finalists=tuple(finalists), selection=selection, chosen=chosen,
                        conditions=got, baseline=base)


def _recorded_confirmation_note(finalists: Sequence[TrialResult],
                                recorded: Sequence[TrialResult]) -> str:
    """``; the recording's confirmation ...`` when it has the best finalist measured again."""
    best = finalists[0]
    searched = best.median_us
    again = next((r for r in recorded if r.config == best.config), None)
    if not searched or again is None or again.status is not Status.OK or not again.median_us:
        return ""
    return (f"; the recording's own confirmation (measured again in a fresh worker after the "
            f"sweep) has the search's best config at {again.median_us:.2f} us, the search "
            f"{searched:.2f} us ({100 * (again.median_us / searched - 1):+.1f} %)")


def build_report(kernel: str, shape: str, dtype: str, runner: Runner,
                 results: Sequence[TrialResult], *, reason: str = "", measured_now: int = 0,
                 top: int = 5, confirm: int = 0,
                 on_confirm: Callable[[int, TrialResult], None] | None = None,
                 conditions: Sequence[str] | None = None, rule: PickRule | None = None,
                 template: KernelTemplate | None = None,
                 env: Mapping[str, Any] | None = None) -> TuneReport:
    """The report of a finished search over ``results`` (the stored trials): best configs,
    speedup with a 95 % interval over the baseline, bandwidth and % of a device copy of the
    same bytes (both from ``runner``).

    ``confirm=k`` re-measures the k fastest configs (see the module docstring); the speedup,
    bandwidth and % of copy then come from the confirmed measurement. ``on_confirm`` sees
    each re-measurement with its round (1 or 2) as it arrives. ``conditions`` and ``rule``
    go to :func:`confirm_finalists`; ``template`` gives the ranges whose edges the fastest
    configs are checked against (none without it) and, with ``env``, the finalists'
    launch-attribute twins that join a confirmation under conditions."""
    notes: list[str] = []
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    ok = ranked_ok(results)
    baseline: TrialResult | None
    try:
        baseline = runner.baseline(shape, dtype)
    except WorkbenchError as exc:
        baseline = None
        notes.append(f"no baseline: {exc.message}")
    confirmation: Confirmation | None = None
    note = ""
    if confirm > 0 and ok:
        finalists = ok[:confirm]
        confirming = one_device(runner)
        if template is not None and env is not None and _under_conditions(
                confirming, conditions, rule):
            # near-ties that vary a choice knob join them: the conditions may tell them apart
            choices = {p.name: p.values() for p in template.for_env(env).params
                       if isinstance(p, Choice)}
            varied = varied_finalists([r.config for r in ok],
                                      [r.timing.median_us for r in ok if r.timing], confirm,
                                      choices)
            by_config = {r.config: r for r in ok}
            finalists = [by_config[c] for c in varied]
        twins = (template.launch_twins([r.config for r in finalists], env)
                 if template is not None and env is not None else [])
        got = confirm_finalists(runner, finalists, on_result=on_confirm,
                                conditions=conditions, rule=rule, twins=twins)
        confirmation, note = (got, "") if isinstance(got, Confirmation) else (None, got)
        unmet = conditions_unmet(confirming, runner.description, conditions, rule)
        if unmet is not None:  # never a silent fallback to the one-condition confirmation
            notes.append(unmet)
    headline = confirmation.chosen if confirmation is not None else (ok[0] if ok else None)
    if confirmation is not None and confirmation.baseline is not None:
        baseline = confirmation.baseline  # the same condition and round as the headline
    speedup = _speedup(baseline, headline)
    copy: CopyTiming | None = None
    if headline is not None and isinstance(runner, Facts):
        try:
            copy = runner.copy_timing(shape, dtype)
        except WorkbenchError as exc:
            notes.append(f"no device-copy timing: {exc.message}")
    best_bw = headline.bandwidth_gb_per_s if headline is not None else None
    pct = 100.0 * best_bw / copy.bandwidth_gb_per_s if (copy is not None and best_bw) else None
    return TuneReport(kernel=kernel, shape=shape, dtype=dtype, runner=runner.description,
                      reason=reason, results=tuple(results), top=tuple(ok[:top]),
                      measured_now=measured_now, baseline=baseline, speedup=speedup,
                      bandwidth_gb_per_s=best_bw,
                      baseline_bandwidth_gb_per_s=(baseline.bandwidth_gb_per_s
                                                   if baseline is not None else None),
                      copy=copy, pct_of_copy=pct, status_counts=counts,
                      confirmation=confirmation, confirm_note=note, notes=tuple(notes),
                      edges=range_edges(template.params, [r.config for r in ok[:top]])
                      if template is not None else ())


def _speedup(baseline: TrialResult | None,
             headline: TrialResult | None) -> SpeedupInterval | None:
    """Bootstrap interval from raw samples where both sides kept them, else the delta
    method from their summary statistics."""
    if baseline is None or headline is None or baseline.timing is None \
            or headline.timing is None or baseline.status is not Status.OK:
        return None
    if baseline.samples_us and headline.samples_us:
        tick = headline.method.clock_tick_us if headline.method is not None else 0.0
        return speedup_interval(baseline.samples_us, headline.samples_us, tick_us=tick)
    return speedup_from_timings(baseline.timing, headline.timing)



#: The rule of a confirmation under the search's condition only.
REMEASURED_RULE = "the fastest finalist measured again (round 1 chooses)"


def decide_pick(report: TuneReport, *, kernel: str, template_version: str,
                session_id: str | None, pick_id: str, device: str = "",
                fallback_reason: str = "",
                ) -> tuple[PickRecord, tuple[ConfirmationMeasurement, ...]] | None:
    """The pick ``report`` decided and the confirmation measurements behind it, as records
    to store (None: no ok trial, nothing to pick). Confirmed where a confirmation ran, else
    the search's fastest trial with ``fallback_reason`` (default: the report's note)."""
    speed = report.speedup
    confirmation = report.confirmation
    if confirmation is not None:
        chosen = confirmation.chosen
        if confirmation.conditions is not None:
            got = confirmation.conditions
            measurements = tuple(ConfirmationMeasurement(
                int(r.extra.get("round") or 0), str(r.extra.get("condition") or ""),
                bool(r.extra.get("is_baseline")), r) for r in got.results)
            rule, holds = got.selection.rule.describe(), got.holds
        else:
            measurements = (*(ConfirmationMeasurement(1, "", False, r)
                              for r in confirmation.selection),
                            ConfirmationMeasurement(2, "", False, chosen))
            rule, holds = REMEASURED_RULE, None
        return (PickRecord(
            id=pick_id, kernel=kernel, template_version=template_version, shape=report.shape,
            dtype=report.dtype, config=chosen.config, decided="confirmed", rule=rule,
            median_us=float(chosen.median_us or 0.0), device=chosen.device or device,
            session_id=session_id, condition=str(chosen.extra.get("condition") or ""),
            search_median_us=confirmation.search_median_us, baseline_us=report.baseline_us,
            speedup=speed.speedup if speed else None, speedup_low=speed.low if speed else None,
            speedup_high=speed.high if speed else None, holds=holds), measurements)
    best = report.best
    if best is None or best.median_us is None:
        return None
    reason = fallback_reason or report.confirm_note or "no confirmation was asked for"
    return (PickRecord(
        id=pick_id, kernel=kernel, template_version=template_version, shape=report.shape,
        dtype=report.dtype, config=best.config, decided="search-best", rule=SEARCH_BEST_RULE,
        median_us=float(best.median_us), device=best.device or device, session_id=session_id,
        fallback_reason=reason, search_median_us=best.median_us,
        baseline_us=report.baseline_us, speedup=speed.speedup if speed else None,
        speedup_low=speed.low if speed else None, speedup_high=speed.high if speed else None),
        ())


def stored_speedup(pick: PickRecord) -> SpeedupInterval | None:
    """The stored pick's speedup as an interval (95 %; the point where none was kept)."""
    if pick.speedup is None:
        return None
    low = pick.speedup_low if pick.speedup_low is not None else pick.speedup
    high = pick.speedup_high if pick.speedup_high is not None else pick.speedup
    return SpeedupInterval(speedup=pick.speedup, low=low, high=high, confidence=0.95)


def confirmation_from_store(pick: PickRecord, rows: Sequence[ConfirmationMeasurement],
                            finalists: Sequence[TrialResult]) -> Confirmation | None:
    """The confirmation behind a stored pick, read back: round 1 (the finalists) and round 2
    of the pick under the pick's condition, and the baseline measured beside it (the
    per-condition table itself is not rebuilt). None for a fallback pick or without rows."""
    if pick.is_fallback:
        return None
    def under(m: ConfirmationMeasurement) -> bool:
        return m.condition == pick.condition
    selection = tuple(m.result for m in rows
                      if m.round_index == 1 and not m.is_baseline and under(m))
    second = [m.result for m in rows if m.round_index == 2 and not m.is_baseline and under(m)
              and m.config == pick.config]
    base = [m.result for m in rows if m.round_index == 2 and m.is_baseline and under(m)]
    if not second:
        return None
    order = {r.config: i for i, r in enumerate(finalists)}
    return Confirmation(finalists=tuple(finalists) or selection,
                        selection=tuple(sorted(selection,
                                               key=lambda r: order.get(r.config, len(order)))),
                        chosen=second[-1], baseline=base[-1] if base else None)


def report_from_store(kernel: str, shape: str, dtype: str, runner: str,
                      results: Sequence[TrialResult], pick: PickRecord | None,
                      rows: Sequence[ConfirmationMeasurement], *, top: int = 5) -> TuneReport:
    """A report from store reads alone (a re-opened session's): every stored trial, the
    stored pick and the confirmation measurements stored with it. The headline time and
    speedup are the pick's; the baseline is the one measured beside the pick (round 2,
    its condition) where stored. Nothing is measured (no copy timing, no L2 profile)."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    ok = ranked_ok(results)
    confirmation = (confirmation_from_store(pick, rows, ok[:top]) if pick is not None
                    else None)
    baseline = confirmation.baseline if confirmation is not None else None
    headline = confirmation.chosen if confirmation is not None else (ok[0] if ok else None)
    note = pick.fallback_reason if pick is not None and pick.is_fallback else ""
    return TuneReport(kernel=kernel, shape=shape, dtype=dtype, runner=runner,
                      reason="stored", results=tuple(results), top=tuple(ok[:top]),
                      measured_now=0, baseline=baseline,
                      speedup=stored_speedup(pick) if pick is not None else None,
                      bandwidth_gb_per_s=headline.bandwidth_gb_per_s if headline else None,
                      baseline_bandwidth_gb_per_s=(baseline.bandwidth_gb_per_s
                                                   if baseline is not None else None),
                      copy=None, pct_of_copy=None, status_counts=counts,
                      confirmation=confirmation, confirm_note=note, stored_pick=pick)
