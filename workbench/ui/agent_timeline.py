"""The agent's iteration timeline: typed agent events folded into one row per iteration.

Pure: :class:`AgentTimeline` takes the agent's events (plan, proposed template and its
diff, review request and decision, retest, iteration end, finish) as they arrive on the
event bus and keeps a frozen :class:`TimelineRow` per iteration; :func:`timeline_html`
draws the rows (the speedup as a bar, so the agent's progress reads at a glance). The
Agent tab redraws it through the panel's rate-limited pusher.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class TimelineRow:
    """What one agent iteration did, as far as it got."""

    iteration: int
    state: str = ""
    plan: str = ""
    version_id: str = ""
    diff: str = ""
    approval: str = ""
    best_us: float | None = None
    speedup: float | None = None
    result: str = ""
    budget: str = ""  # the tune step's "N more, M stored" (its end, once the search ended)


class AgentTimeline:
    """Folds agent events into rows (not thread-safe by itself: the panel holds a lock)."""

    def __init__(self) -> None:
        self.rows: dict[int, TimelineRow] = {}
        self.finished = ""  # why the agent stopped, once it has
        self.state = ""

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def _update(self, iteration: int, **fields: Any) -> None:
        row = self.rows.get(iteration, TimelineRow(iteration))
        self.rows[iteration] = replace(row, **fields)

    def add(self, event: Any) -> bool:
        """Fold one event in; False when the event is not the agent's (nothing changed)."""
        from workbench.agent import events as ag
        from workbench.core import events as core

        if isinstance(event, ag.AgentStateChanged):
            self.state = event.state
            if event.iteration > 0:
                self._update(event.iteration, state=event.state)
        elif isinstance(event, ag.PlanMade):
            text = f"{event.next_action}: {event.diagnosis}".strip(": ")
            self._update(event.iteration, plan=f"{text} ({event.source})")
        elif isinstance(event, ag.TemplateProposed):
            self._update(event.iteration, version_id=event.version_id, diff=event.diff,
                         approval=f"validation {event.validation_status}")
        elif isinstance(event, ag.ProposalRejected):
            self._update(event.iteration,
                         approval="proposal rejected: " + "; ".join(event.problems)[:300])
        elif isinstance(event, ag.ReviewRequested):
            self._update(event.iteration, version_id=event.version_id,
                         diff=event.diff or self.rows.get(event.iteration,
                                                          TimelineRow(0)).diff,
                         approval="waiting for your review")
        elif isinstance(event, ag.ReviewRecorded):
            for row in self.rows.values():
                if row.version_id == event.version_id:
                    self._update(row.iteration,
                                 approval=f"{event.decision} by {event.reviewer}")
        elif isinstance(event, ag.TuneBudget):
            self._update(event.iteration, budget=event.words
                         if not event.reason else f"{event.words} ({event.reason})")
        elif isinstance(event, ag.BestRetested):
            self._update(event.iteration, best_us=event.best_us, speedup=event.speedup)
        elif isinstance(event, core.IterationFinished):
            self._update(event.iteration, best_us=event.best_us, speedup=event.speedup,
                         result=event.detail)
        elif isinstance(event, ag.AgentFinished):
            self.state = event.state
            self.finished = f"{event.state}: {event.reason}"
        else:
            return False
        return True


def timeline_html(timeline: AgentTimeline) -> str:
    """The rows as a table (class ``wb-agent-table``), newest last, speedups as bars."""
    if not timeline.rows:
        status = html.escape(timeline.finished or timeline.state)
        return ('<div class="wb-agent-empty">no agent iteration yet'
                f"{': ' + status if status else ''}</div>")
    top = max((r.speedup or 0.0) for r in timeline.rows.values()) or 1.0
    rows = []
    for it in sorted(timeline.rows):
        r = timeline.rows[it]
        lines = len(r.diff.splitlines())
        diff = (f"<details><summary>{lines} lines</summary><pre>{html.escape(r.diff[:6000])}"
                "</pre></details>" if r.diff else "")
        best = "" if r.best_us is None else f"{r.best_us:.3f} µs"
        if r.speedup is None:
            speed = ""
        else:
            width = max(4, int(120 * r.speedup / top))
            speed = (f'<div class="wb-speedup-bar" style="width:{width}px;background:#17becf;'
                     f'height:10px;display:inline-block"></div> {r.speedup:.3f}×')
        rows.append(
            f"<tr><td>{r.iteration}</td><td>{html.escape(r.state)}"
            + (f'<div class="wb-agent-budget">{html.escape(r.budget)}</div>' if r.budget
               else "") + "</td>"
            f"<td>{html.escape(r.plan)}</td><td>{diff}</td>"
            f"<td class=\"wb-agent-approval\">{html.escape(r.approval)}</td><td>{best}</td>"
            f"<td>{speed}</td><td>{html.escape(r.result[:200])}</td></tr>")
    finished = (f'<div class="wb-agent-finished">{html.escape(timeline.finished)}</div>'
                if timeline.finished else "")
    return ('<table class="wb-agent-table"><tr><th>#</th><th>state</th><th>plan</th>'
            "<th>diff</th><th>approval</th><th>best</th><th>speedup</th><th>result</th></tr>"
            f"{''.join(rows)}</table>{finished}")
