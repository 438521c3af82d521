"""The trial table: every trial of the search, filtered, sorted and shown a page at a time.

Pure: :func:`select_rows` turns a :class:`~workbench.ui.figures.ChartData` snapshot and a
:class:`TableQuery` into row indices (vectorized, so 10,000 trials cost a few ms);
:func:`trials_html` renders them. A filter is an expression in the workbench's safe
language over the numeric parameters, ``median_us``, ``speedup`` and ``trial`` (the
1-based evaluation number), e.g. ``VEC_BYTES == 16 and median_us < 5``: parsed through the
AST whitelist, never ``eval``-ed.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.core.errors import ExpressionError
from workbench.ui.figures import ChartData

SORT_KEYS = ("median_us", "trial")  # besides the parameters
STATUS_FILTERS = ("ok", "all", "failed")


@dataclass(frozen=True)
class TableQuery:
    """What the table shows: a filter, a sort column and direction, statuses, a row limit."""

    filter: str = ""
    sort_by: str = "median_us"
    descending: bool = False
    status: str = "ok"  # "ok" | "all" | "failed"
    limit: int = 20


@dataclass(frozen=True)
class Selection:
    """The rows a query selected (``rows``, at most ``limit``) out of ``matched``."""

    rows: np.ndarray
    matched: int
    error: str = ""


def _env(data: ChartData) -> dict[str, np.ndarray]:
    env: dict[str, np.ndarray] = {}
    for name, values in data.values.items():
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            continue  # string-valued parameters cannot be compared numerically
        if arr.shape == (data.count,):
            env[name] = arr
    env["median_us"] = data.median_us
    with np.errstate(divide="ignore", invalid="ignore"):
        env["speedup"] = (np.full(data.count, np.nan) if not data.baseline_us
                          else data.baseline_us / data.median_us)
    env["trial"] = np.arange(1, data.count + 1, dtype=np.float64)
    return env


def select_rows(data: ChartData, query: TableQuery) -> Selection:
    """Indices of the trials ``query`` shows, in display order."""
    count = data.count
    has_time = ~np.isnan(data.median_us)
    mask = {"ok": has_time, "failed": ~has_time}.get(query.status, np.ones(count, dtype=bool))
    env = _env(data)
    error = ""
    if query.filter.strip():
        from workbench.core.expr import parse_expr

        try:
            expr = parse_expr(query.filter, known_names=list(env))
            with np.errstate(all="ignore"):
                values, invalid = expr.evaluate_masked(env)
            keep = (np.broadcast_to(np.asarray(values, dtype=bool), (count,))
                    & ~np.broadcast_to(np.asarray(invalid, dtype=bool), (count,)))
            mask = mask & keep
        except ExpressionError as exc:
            error = f"filter not applied: {exc.message}"
    if query.sort_by not in env:
        error = error or f"cannot sort by {query.sort_by!r}; known: {', '.join(env)}"
        key = env["trial"]
    else:
        key = env[query.sort_by]
    idx = np.flatnonzero(mask)
    sort_key = key[idx]
    sort_key = np.where(np.isnan(sort_key), np.inf, sort_key)  # no runtime: last
    order = np.argsort(-sort_key if query.descending else sort_key, kind="stable")
    if query.descending:  # NaNs became -inf: keep them last
        order = np.r_[order[np.isfinite(sort_key[order])], order[~np.isfinite(sort_key[order])]]
    return Selection(rows=idx[order][:max(query.limit, 0)], matched=int(idx.size), error=error)


def varying_params(data: ChartData) -> list[str]:
    """The parameters that take more than one value among the trials (the others say
    nothing to tell rows apart; they are in each row's tooltip)."""
    return [n for n in data.param_names if len({str(v) for v in data.values[n]}) > 1]


def trials_html(data: ChartData, query: TableQuery) -> str:
    """The selected trials as an HTML table (class ``wb-trials-table``) with a caption.

    One narrow ``config`` column holds the knobs that vary (wrapped; the whole config in its
    tooltip), so status, median, speedup and reason fit a 1280 px screen beside it (a column
    per knob pushed them past the panel's edge); long reasons end in an ellipsis with the
    full text in their tooltip."""
    if not data.count:
        return '<div class="wb-trials-empty">no trial yet</div>'
    sel = select_rows(data, query)
    names: Sequence[str] = data.param_names
    shown = varying_params(data) or list(names)
    head = "".join(f"<th>{html.escape(n)}</th>" for n in ("#", "config", "status",
                                                          "median µs", "speedup", "reason"))
    rows = []
    for i in sel.rows:
        t = data.median_us[i]
        speed = (f"{data.baseline_us / t:.3f}×" if data.baseline_us and not np.isnan(t) else "")
        whole = " ".join(f"{n}={data.values[n][i]}" for n in names)
        knobs = " ".join(f"{n}={data.values[n][i]}" for n in shown)
        reason = data.reasons[i]
        rows.append(
            f'<tr><td>{i + 1}</td>'
            f'<td class="wb-trials-config" title="{html.escape(whole)}">{html.escape(knobs)}</td>'
            f'<td class="wb-trials-status">{html.escape(data.statuses[i])}</td>'
            f'<td class="wb-trials-median">{"" if np.isnan(t) else f"{t:.3f}"}</td>'
            f'<td class="wb-trials-speedup">{speed}</td>'
            f'<td class="wb-trials-reason" title="{html.escape(reason[:1000])}">'
            f"{html.escape(reason[:160])}</td></tr>")
    caption = (f"{len(sel.rows)} of {sel.matched} matching trials ({data.count} in all), "
               f"sorted by {html.escape(query.sort_by)} "
               f"{'descending' if query.descending else 'ascending'}"
               + (f"; config shows the knobs that vary ({len(shown)} of {len(names)})"
                  if len(shown) < len(names) else ""))
    error = (f'<div class="wb-trials-error" style="color:#b00020">{html.escape(sel.error)}</div>'
             if sel.error else "")
    return (f'{error}<div class="wb-trials-caption">{caption}</div>'
            f'<table class="wb-trials-table"><tr>{head}</tr>{"".join(rows)}</table>')
