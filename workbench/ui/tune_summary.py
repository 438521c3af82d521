"""A tune's result as a compact table: the pick, its speedup with the interval, % of copy,
and the condition table (finalists x cache conditions).

Built in two steps, Optuna style: :func:`summary_info` reads a report into a small frozen
:class:`SummaryInfo` (what the tool picked, as data), :func:`summary_html` renders it. The
rendering never reads the report, so it serves whatever holds the pick (today
``TuneReport.pick``; a stored pick record reads into the same info). ``report.summary()``
stays the terminal's text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.picks import SLOWER_THAN_BASELINE, slower_than_baseline
from workbench.core.records import TrialResult, Value
from workbench.core.trial_labels import label_counts


@dataclass(frozen=True)
class ConditionRow:
    """One row of the condition table: a finalist (or the baseline) under each condition."""

    label: str
    median_us: tuple[float | None, ...]  # per condition, in SummaryInfo.conditions' order
    ratio: tuple[float | None, ...]      # time / baseline time (< 1 is faster)
    picked: bool = False
    eligible: bool | None = None         # None for the baseline


@dataclass(frozen=True)
class SummaryInfo:
    """What a tune found, as the table shows it."""

    kernel: str
    shape: str
    dtype: str
    reason: str                                   # why the search ended
    pick_changes: tuple[tuple[str, str], ...]     # knobs the pick sets away from defaults
    pick_median_us: float | None = None
    baseline_us: float | None = None
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    confidence_pct: int = 95
    pct_of_copy: float | None = None
    confirmed: bool = False                       # the pick was measured again
    counts: tuple[tuple[str, int], ...] = ()      # status label -> trials stored
    conditions: tuple[str, ...] = ()
    condition_rows: tuple[ConditionRow, ...] = ()
    notes: tuple[str, ...] = ()


def changed_knobs(config: Mapping[str, Value], defaults: Mapping[str, Value]
                  ) -> tuple[tuple[str, str], ...]:
    """The knobs of ``config`` whose value is not the template's default, as text."""
    return tuple((k, str(v)) for k, v in config.items() if k not in defaults
                 or defaults[k] != v)


def summary_info(report: Any, defaults: Mapping[str, Value],
                 pick: TrialResult | None = None) -> SummaryInfo:
    """``report`` (a :class:`~workbench.engine.tuning.TuneReport`) as a :class:`SummaryInfo`;
    ``pick`` overrides ``report.pick`` (a stored pick record's result)."""
    chosen = pick if pick is not None else getattr(report, "pick", None)
    speed = getattr(report, "speedup", None)
    confirmation = getattr(report, "confirmation", None)
    conditions: tuple[str, ...] = ()
    rows: tuple[ConditionRow, ...] = ()
    cond = getattr(confirmation, "conditions", None)
    if cond is not None:
        from workbench.core.conditions import condition_table, short_labels

        reported = cond.selection  # round 1: every finalist under every condition
        conditions = tuple(reported.conditions)
        labels = short_labels([None, *(s.times.config for s in reported.scored)])
        rows = tuple(ConditionRow(
            label=label,
            median_us=tuple(_num(row.get(f"{k}_us")) for k in conditions),
            ratio=tuple(_num(row.get(f"{k}_ratio")) for k in conditions),
            picked=bool(row.get("picked")),
            eligible=_flag(row.get("eligible")))
            for row, label in zip(condition_table(reported), labels, strict=True))
    results: Sequence[TrialResult] = getattr(report, "results", ())
    return SummaryInfo(
        kernel=str(getattr(report, "kernel", "")), shape=str(getattr(report, "shape", "")),
        dtype=str(getattr(report, "dtype", "")), reason=str(getattr(report, "reason", "")),
        pick_changes=changed_knobs(chosen.config, defaults) if chosen is not None else (),
        pick_median_us=chosen.median_us if chosen is not None else None,
        baseline_us=getattr(report, "baseline_us", None),
        speedup=speed.speedup if speed is not None else None,
        speedup_low=speed.low if speed is not None else None,
        speedup_high=speed.high if speed is not None else None,
        confidence_pct=round(speed.confidence * 100) if speed is not None else 95,
        pct_of_copy=getattr(report, "pct_of_copy", None),
        confirmed=confirmation is not None,
        counts=tuple(sorted(label_counts(results).items())),
        conditions=conditions, condition_rows=rows,
        notes=tuple(getattr(report, "notes", ())))


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


_CSS = (".wb-summary table{border-collapse:collapse;font-size:12px;margin:2px 0 6px}"
        ".wb-summary th,.wb-summary td{padding:1px 8px;text-align:left;"
        "border-bottom:1px solid #e4e4e4;white-space:nowrap}"
        ".wb-summary td.wb-num{text-align:right;font-variant-numeric:tabular-nums}"
        ".wb-summary tr.wb-picked td{font-weight:600;background:#eef6ee}"
        ".wb-summary .wb-summary-note{color:#555;font-size:11px}")


def summary_html(info: SummaryInfo) -> str:
    """``info`` as HTML (class ``wb-summary``): a two-column table of the pick and its
    numbers, then the condition table when there is one. Pure."""
    e = html.escape
    knobs = (" ".join(f"{k}={v}" for k, v in info.pick_changes) if info.pick_changes
             else "the template's defaults")
    rows: list[tuple[str, str]] = [
        ("pick", f'<code class="wb-summary-pick">{e(knobs)}</code>'
                 + (" (confirmed)" if info.confirmed else "")),
    ]
    if info.pick_median_us is not None:
        base = (f" vs baseline {info.baseline_us:.2f} µs" if info.baseline_us else "")
        rows.append(("median", f"{info.pick_median_us:.2f} µs{e(base)}"))
    if info.speedup is not None:
        interval = (f" ({info.confidence_pct} % CI {info.speedup_low:.3f}–"
                    f"{info.speedup_high:.3f})" if info.speedup_low is not None
                    and info.speedup_high is not None else "")
        rows.append(("speedup", f'<span class="wb-summary-speedup">{info.speedup:.3f}×'
                                f"{e(interval)}</span>"))
        if slower_than_baseline(info.speedup_high):
            rows.append(("verdict", f'<span class="wb-summary-slower">'
                                    f"{e(SLOWER_THAN_BASELINE)}</span>"))
    if info.pct_of_copy is not None:
        rows.append(("% of copy", f"{info.pct_of_copy:.1f} % of a device copy's bandwidth"))
    counts = ", ".join(f"{k} {v}" for k, v in info.counts)
    rows.append(("stored", e(f"{sum(v for _, v in info.counts)} trials ({counts}); "
                             f"ended: {info.reason}")))
    head = (f"<b>{e(info.kernel)}</b> {e(info.shape)} / {e(info.dtype)}")
    table = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    out = [f'<div class="wb-summary"><style>{_CSS}</style>{head}'
           f'<table class="wb-summary-table">{table}</table>']
    if info.condition_rows:
        cells = "".join(f"<th>{e(c)}</th>" for c in info.conditions)
        body = []
        for r in info.condition_rows:
            tds = "".join(
                f'<td class="wb-num">{us:.2f} µs ({ratio:.3f})</td>'
                if us is not None and ratio is not None else '<td class="wb-num">–</td>'
                for us, ratio in zip(r.median_us, r.ratio, strict=True))
            cls = ' class="wb-picked"' if r.picked else ""
            mark = " ✓" if r.picked else (" ✗" if r.eligible is False else "")
            body.append(f"<tr{cls}><td>{e(r.label)}{mark}</td>{tds}</tr>")
        out.append(f'<table class="wb-summary-conditions"><tr><th>finalist</th>{cells}</tr>'
                   f"{''.join(body)}</table><div class=\"wb-summary-note\">median µs (time / "
                   "baseline); ✓ the pick, ✗ slower than the baseline under a condition"
                   "</div>")
    out.extend(f'<div class="wb-summary-note">note: {e(n)}</div>' for n in info.notes)
    out.append("</div>")
    return "".join(out)
