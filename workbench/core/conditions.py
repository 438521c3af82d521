"""Cache conditions a pick must hold under, and the declared rule that picks.

A search times every candidate under one condition (the L2 evicted by reading a 2x-L2
buffer before each repetition). A deployment runs the kernel in other states: after a
large write that left the L2 full of dirty lines, warm (its inputs still in L2 from the
previous call), or back to back inside a CUDA graph. On the H100 a silu_and_mul decode
config that was 1.16x faster than its baseline after a read eviction measured slower than
the baseline after a write eviction (issue 18), so the confirmation of the finalists
measures each of them under every condition here, and :func:`choose` applies a declared
rule to those measurements.

Pure: configs, medians and the rule in; a :class:`Pick` and table rows out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from workbench.core.errors import WorkbenchError
from workbench.core.records import Config

#: Every cache condition the confirmation can measure under, with what it means.
CONDITIONS: Mapping[str, str] = {
    "read": "L2 evicted before each repetition by reading a 2x-L2 buffer (clean lines; the "
            "search's condition)",
    "write": "L2 left dirty before each repetition by writing a 2x-L2 buffer (their "
             "write-back lands inside the timed kernel)",
    "warm": "no eviction: repetitions back to back, inputs left in L2 by the previous one",
    "graph": "back to back inside a CUDA graph: time per launch of a captured sequence "
             "(warm, no launch gaps from the host)",
}

#: The conditions a confirmation measures when none are named.
DEFAULT_CONDITIONS: tuple[str, ...] = tuple(CONDITIONS)


def check_conditions(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` as a tuple, each checked against :data:`CONDITIONS` (no duplicates)."""
    out: list[str] = []
    for name in names:
        if name not in CONDITIONS:
            raise WorkbenchError(f"unknown cache condition {name!r}; expected one of "
                                 f"{list(CONDITIONS)}", key="condition", value=name,
                                 choices=list(CONDITIONS))
        if name not in out:
            out.append(name)
    if not out:
        raise WorkbenchError("no cache condition named", key="conditions", value=list(names),
                             choices=list(CONDITIONS))
    return tuple(out)


@dataclass(frozen=True)
class PickRule:
    """How the finalists' per-condition medians become one pick.

    ``condition=None`` (the default) scores each config by the geometric mean over the
    measured conditions of its time relative to the baseline; a condition name scores by
    that condition alone (``workbench tune --condition warm``: tune for one deployment).
    With ``never_slower`` a config slower than the baseline (by more than
    ``tolerance_pct``) in any measured condition is not eligible; when no finalist is
    eligible the one with the smallest worst-condition ratio is picked and the pick says
    it does not hold.

    Eligible finalists whose score is within ``tie_pct`` of the best are a tie the
    measurements cannot order: they are decided by a fixed order of their configs (the
    smallest parameter values first, by parameter name), not by which one the noise put
    first, so repeated runs (one device or several, direct or on a cluster) agree. The
    default 1 % is about the run-to-run spread of one config's geometric-mean ratio seen
    on the H200 (2026-11-27: 0.778, 0.783 and 0.785 for the same config in three
    confirmations of fused_add_rmsnorm decode).
    """

    condition: str | None = None
    never_slower: bool = True
    tolerance_pct: float = 0.0
    tie_pct: float = 1.0

    def __post_init__(self) -> None:
        if self.condition is not None:
            check_conditions([self.condition])
        if not 0.0 <= self.tolerance_pct <= 50.0:
            raise WorkbenchError(f"PickRule.tolerance_pct = {self.tolerance_pct!r}; expected "
                                 f"0..50", key="tolerance_pct", value=self.tolerance_pct,
                                 expected="0..50")
        if not 0.0 <= self.tie_pct <= 10.0:
            raise WorkbenchError(f"PickRule.tie_pct = {self.tie_pct!r}; expected 0..10",
                                 key="tie_pct", value=self.tie_pct, expected="0..10")

    def describe(self) -> str:
        score = (f"fastest under '{self.condition}'" if self.condition
                 else "best geometric mean over conditions (time / baseline)")
        guard = (f", never slower than the baseline in any condition"
                 f"{f' (beyond {self.tolerance_pct:g} %)' if self.tolerance_pct else ''}"
                 if self.never_slower else "")
        tie = (f"; within {self.tie_pct:g} % of the best a tie, decided by config order"
               if self.tie_pct else "")
        return score + guard + tie


@dataclass(frozen=True)
class ConditionTimes:
    """One implementation's median (us) under each condition it was measured in; a
    condition it failed in is absent."""

    label: str                       # "baseline" or the config's text
    config: Config | None            # None for the baseline kernel
    median_us: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Scored:
    """A finalist's ratios to the baseline per condition, its score and eligibility."""

    times: ConditionTimes
    ratio: Mapping[str, float]       # config median / baseline median (< 1 is faster)
    score: float                     # what the rule minimises
    worst_ratio: float
    eligible: bool
    why_not: str = ""


@dataclass(frozen=True)
class Pick:
    """The rule's choice among the finalists, with every finalist's score."""

    rule: PickRule
    conditions: tuple[str, ...]
    baseline: ConditionTimes
    scored: tuple[Scored, ...]       # in the finalists' order
    chosen: Scored
    holds: bool                      # the chosen config satisfies the rule's guard

    @property
    def config(self) -> Config:
        assert self.chosen.times.config is not None
        return self.chosen.times.config

    def summary(self) -> str:
        c = self.chosen
        ratios = ", ".join(f"{k} {c.ratio[k]:.3f}" for k in self.conditions if k in c.ratio)
        verdict = "holds" if self.holds else f"DOES NOT HOLD ({c.why_not})"
        return (f"  pick ({self.rule.describe()}): {dict(self.config)}; time / baseline: "
                f"{ratios}; {verdict}")


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.inf


def score(times: ConditionTimes, baseline: ConditionTimes, conditions: Sequence[str],
          rule: PickRule) -> Scored:
    """One finalist against the baseline under ``rule`` (missing conditions disqualify)."""
    ratio = {k: times.median_us[k] / baseline.median_us[k] for k in conditions
             if k in times.median_us and baseline.median_us.get(k)}
    missing = [k for k in conditions if k not in ratio]
    worst = max(ratio.values(), default=math.inf)
    if rule.condition is not None:
        value = ratio.get(rule.condition, math.inf)
    else:
        value = _geomean(list(ratio.values())) if not missing else math.inf
    why = ""
    if missing:
        why = f"not measured under {', '.join(missing)}"
    elif rule.never_slower and worst > 1.0 + rule.tolerance_pct / 100.0:
        slow = max(ratio, key=lambda k: ratio[k])
        why = f"slower than the baseline under '{slow}' ({ratio[slow]:.3f}x its time)"
    return Scored(times=times, ratio=ratio, score=value, worst_ratio=worst,
                  eligible=not why, why_not=why)


def config_order(config: Config | None) -> tuple[tuple[str, int, float, str], ...]:
    """A fixed order of configs for deciding ties: parameter by parameter in name order,
    the smaller value first (numbers by value, other values by their text)."""
    if config is None:
        return ()
    out: list[tuple[str, int, float, str]] = []
    for name, value in sorted(dict(config).items()):
        number = float(value) if isinstance(value, (int, float)) else None  # bools: 0, 1
        out.append((name, 0, number, "") if number is not None else (name, 1, 0.0, str(value)))
    return tuple(out)


def choose(finalists: Sequence[ConditionTimes], baseline: ConditionTimes,
           conditions: Sequence[str], rule: PickRule | None = None) -> Pick:
    """Apply ``rule`` (default :class:`PickRule`) to the finalists' per-condition medians.

    The eligible finalist with the lowest score wins; finalists within the rule's
    ``tie_pct`` of it are a tie, decided by :func:`config_order` (exact ties without a
    config: the earlier finalist, i.e. the search's faster one); with none eligible, the
    one with the smallest worst-condition ratio, and ``holds`` is False."""
    rule = rule or PickRule()
    conds = check_conditions(conditions)
    if rule.condition is not None and rule.condition not in conds:
        raise WorkbenchError(f"the pick rule's condition {rule.condition!r} is not among the "
                             f"measured conditions {list(conds)}", key="condition",
                             value=rule.condition, choices=list(conds))
    if not finalists:
        raise WorkbenchError("no finalists to pick from", key="finalists", value=0,
                             expected=">= 1")
    scored = tuple(score(t, baseline, conds, rule) for t in finalists)
    eligible = [s for s in scored if s.eligible]
    if eligible:
        best = min(s.score for s in eligible)
        tied = [s for s in eligible if s.score <= best * (1.0 + rule.tie_pct / 100.0)]
        chosen = min(tied, key=lambda s: config_order(s.times.config))
    else:
        chosen = min(scored, key=lambda s: (s.worst_ratio, s.score))
    return Pick(rule=rule, conditions=conds, baseline=baseline, scored=scored, chosen=chosen,
                holds=chosen.eligible)


def condition_table(pick: Pick) -> list[dict[str, object]]:
    """Rows for a report or a panel: the baseline, then every finalist, each with its
    median per condition (``<cond>_us``), its ratio to the baseline (``<cond>_ratio``), the
    geometric mean of the ratios, whether it is eligible and whether it is the pick."""
    rows: list[dict[str, object]] = []
    base: dict[str, object] = {"label": "baseline", "picked": False, "eligible": None,
                               "geomean_ratio": 1.0, "why_not": ""}
    for k in pick.conditions:
        base[f"{k}_us"] = pick.baseline.median_us.get(k)
        base[f"{k}_ratio"] = 1.0 if pick.baseline.median_us.get(k) else None
    rows.append(base)
    for s in pick.scored:
        row: dict[str, object] = {"label": s.times.label, "picked": s is pick.chosen,
                                  "eligible": s.eligible, "why_not": s.why_not,
                                  "geomean_ratio": _geomean(list(s.ratio.values()))
                                  if s.ratio else None}
        for k in pick.conditions:
            row[f"{k}_us"] = s.times.median_us.get(k)
            row[f"{k}_ratio"] = s.ratio.get(k)
        rows.append(row)
    return rows


def short_labels(configs: Sequence[Config | None]) -> list[str]:
    """A label per config naming only the knobs whose values differ among ``configs`` (the
    whole config where nothing differs; ``baseline`` for None): finalists share most knobs,
    and a label cut to a column's width would otherwise show only the shared ones."""
    present = [c for c in configs if c is not None]
    varying = [k for k in (present[0].keys() if present else ())
               if len({c.get(k) for c in present}) > 1]
    return ["baseline" if c is None else
            " ".join(f"{k}={c[k]}" for k in (varying or list(c.keys()))) for c in configs]


def format_condition_table(pick: Pick) -> str:
    """:func:`condition_table` as fixed-width text (medians in us, ratio to baseline); each
    finalist is named by the knobs in which the finalists differ (the pick line names it
    whole)."""
    head = f"  {'':40s}" + "".join(f"{k:>16s}" for k in pick.conditions) + f"{'geomean':>9s}"
    lines = [head]
    labels = short_labels([None, *(s.times.config for s in pick.scored)])
    for row, label in zip(condition_table(pick), labels, strict=True):
        row = {**row, "label": label}
        cells = []
        for k in pick.conditions:
            us, ratio = row[f"{k}_us"], row[f"{k}_ratio"]
            cells.append(f"{us:8.2f} ({ratio:.3f})" if isinstance(us, float)
                         and isinstance(ratio, float) else f"{'-':>16s}")
        mark = "*" if row["picked"] else ("x" if row["eligible"] is False else " ")
        gm = row["geomean_ratio"]
        lines.append(f"{mark} {str(row['label'])[:40]:40s}" + "".join(f"{c:>16s}" for c in cells)
                     + (f"{gm:9.3f}" if isinstance(gm, float) else f"{'-':>9s}"))
    lines.append("  (* the pick; x not eligible: slower than the baseline under some condition)")
    return "\n".join(lines)


#: A config whose time under the search's condition lies within this many percent of the
#: fastest is a near-tie there: which of them holds best is for the other conditions to say.
NEAR_TIE_PCT = 2.0


def varied_finalists(ranked: Sequence[Config], times_us: Sequence[float], k: int,
                     choices: Mapping[str, Sequence[object]], *,
                     near_pct: float = NEAR_TIE_PCT) -> list[Config]:
    """The ``k`` fastest of ``ranked`` (fastest first, ``times_us`` beside them) and, for
    every value of a choice knob that none of those holds, the fastest config holding it
    that is a near-tie with the fastest (within ``near_pct`` %), at most ``k`` more.

    The search ranks by one condition; near its top the order is noise there, and a knob
    value whose gain shows only under another condition could sit at rank 6 and never be
    confirmed (on the H100 at silu 1536 x 4864, a last-use full tile: 17.7 us with an L2
    full of dirty lines against 18.4-18.8 for the search's five fastest, all within 0.5 %
    of each other after a read). Pure: configs and times in, configs out."""
    if k <= 0 or not ranked:
        return []
    top = list(ranked[:k])
    limit = times_us[0] * (1.0 + near_pct / 100.0)
    extra: list[Config] = []
    for name, values in choices.items():
        held = {c.get(name) for c in top}
        for value in values:
            if value in held:
                continue
            for config, t in zip(ranked[k:], times_us[k:], strict=False):
                if t > limit:
                    break
                if config.get(name) == value:
                    if config not in extra:
                        extra.append(config)
                    break
    return top + extra[:k]
