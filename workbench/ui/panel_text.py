"""The panel's text: the header, the progress line, errors, the best config, recent failures.

Pure functions from records to HTML or plain text; the widgets that show them live in
:mod:`workbench.ui.panel`, :mod:`workbench.ui.search_tab` and :mod:`workbench.ui.template_tab`.
"""

from __future__ import annotations

import html
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.core.budget_words import BudgetSplit
from workbench.core.defines import define_lines
from workbench.core.errors import WorkbenchError
from workbench.core.records import Status, TrialResult
from workbench.core.trial_labels import status_label


@dataclass(frozen=True)
class HeaderFacts:
    """What the header says: what measures, the template version and the problem shown."""

    kernel: str
    device: str
    version: str
    shape: str
    dtype: str
    status: str
    replay_problem: str = ""  # why the runner cannot measure this template ("" when it can)


def header_html(facts: HeaderFacts) -> str:
    """The header line (classes ``wb-kernel``, ``wb-version``, ``wb-header-shape`` ...), and
    above it, in red, why nothing can be measured here when that is so."""
    warning = (f'<div class="wb-replay-problem" style="color:#b00020">cannot measure '
               f"here: {html.escape(facts.replay_problem)}</div>" if facts.replay_problem
               else "")
    return warning + (
        f'<div><b class="wb-kernel">{html.escape(facts.kernel)}</b> · '
        f'<span class="wb-device">{html.escape(facts.device)}</span> · '
        f'template <code class="wb-version">{html.escape(facts.version)}</code> · '
        f'shape <code class="wb-header-shape">{html.escape(facts.shape)}</code> · '
        f'dtype <code class="wb-header-dtype">{html.escape(facts.dtype)}</code> · '
        f'status <b class="wb-status">{html.escape(facts.status)}</b></div>')


@dataclass(frozen=True)
class Progress:
    """The progress bar's numbers: ``done`` of ``budget`` and the label drawn on it."""

    done: int
    budget: int
    label: str


def progress_of(results: Sequence[TrialResult], budget: int, *,
                exhausted: bool = False) -> Progress:
    """Progress toward ``budget`` (the total of measured evaluations for this template
    version, shape and dtype, stored ones included) as the search counts it: measured
    trials (ok or failed), never the configs pruned before the GPU. The label is the one
    budget wording, "N more, M stored" (:mod:`workbench.core.budget_words`); with no budget
    (no search of this panel runs the problem) it says only what is stored. ``exhausted``
    (the search ended because the space has no config left): the bar is full and says so."""
    measured = sum(1 for r in results if r.status is not Status.PRUNED)
    if exhausted:
        return Progress(measured, measured,
                        f"space exhausted: {measured} stored, nothing more to measure")
    if budget <= 0:
        return Progress(measured, 0, f"{measured} stored")
    split = BudgetSplit(budget, measured)
    return Progress(min(measured, budget), budget, split.words)


def eta_words(status: str, running_s: float, eta_s: float | None, evaluated: int) -> str:
    """Beside the bar: the running time and ETA while running; "paused" while paused (no
    ETA: nothing progresses); after the end only how many were evaluated (no "ETA 0 s")."""
    if status == "paused":
        return f"paused ({running_s:.0f} s running)"
    if status == "running" and eta_s is not None:
        return (f"{running_s:.0f} s running, ETA {eta_s:.0f} s" if eta_s >= 1
                else f"{running_s:.0f} s running, finishing")
    if status == "running":
        return f"{running_s:.0f} s running"
    return f"{evaluated} evaluated" if evaluated else ""
def describe_error(exc: BaseException) -> str:
    """Readable HTML for an error: message, the data it carries, a folded traceback."""
    if isinstance(exc, WorkbenchError):
        head = html.escape(exc.message)
        details = {k: v for k, v in exc.details.items() if v not in (None, "", [], {})}
        log = details.pop("log_excerpt", None) or details.pop("log", None)
        items = "".join(f"<li><b>{html.escape(str(k))}</b>: {html.escape(str(v)[:300])}</li>"
                        for k, v in details.items())
        body = f"<ul>{items}</ul>" if items else ""
        if log:
            body += f"<pre>{html.escape(str(log)[-2000:])}</pre>"
        kind = type(exc).__name__
    else:
        head = html.escape(f"{type(exc).__name__}: {exc}")
        body = ""
        kind = "unexpected error"
    tb = html.escape("".join(traceback.format_exception(exc))[-4000:])
    return (f'<div class="wb-error" style="color:#b00020"><b>{html.escape(kind)}</b>: {head}'
            f"{body}<details><summary>traceback</summary><pre>{tb}</pre></details></div>")


def search_error_html(message: str, detail: str) -> str:
    """An error the search reported as an event (its traceback text folded)."""
    return (f'<div class="wb-error" style="color:#b00020"><b>search error</b>: '
            f"{html.escape(message)}<details><summary>details</summary>"
            f"<pre>{html.escape(detail[-3000:])}</pre></details></div>")


def config_defines(result: TrialResult) -> str:
    """The best config as a ``#define`` block (one line per parameter)."""
    lines = [f"// {result.shape} {result.dtype}: {result.median_us:.3f} us" if result.median_us
             else f"// {result.shape} {result.dtype}"]
    lines += define_lines(result.config)
    return "\n".join(lines) + "\n"


def failures_html(results: Sequence[TrialResult], limit: int = 5) -> str:
    """The most recent failures with their status (:func:`status_label`: a replay's
    "not in recording" apart from "pruned"), their config once, the reason and the
    compiler-log excerpt, one per line."""
    failed = [r for r in results if r.status is not Status.OK][-limit:]
    if not failed:
        return ""
    items = []
    for r in reversed(failed):
        log = f"<pre>{html.escape(r.log_excerpt[:1200])}</pre>" if r.log_excerpt else ""
        config = " ".join(f"{k}={v}" for k, v in r.config.items())
        reason = r.reason.replace(str(dict(r.config)), "this config")  # once per line
        items.append(f'<li class="wb-failure"><b>{html.escape(status_label(r))}</b> '
                     f"<code>{html.escape(config)}</code>: {html.escape(reason)}{log}</li>")
    return f"<b>recent failures and pruned configs</b><ul>{''.join(items)}</ul>"
