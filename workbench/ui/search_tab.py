"""The panel's Search tab: launch controls, and the run view with the trials it shows.

:class:`SearchTab` owns the trial table behind the charts (a
:class:`~workbench.ui.figures.TrialTable` under its lock), the figure's axes for the current
template's parameters, the run's progress numbers (budget, clock) and the
:class:`~workbench.ui.throttle.CoalescingPusher` that sends them to the browser as ONE
message of the :class:`~workbench.ui.state_view.RunView`, at most 4 times a second and only
once the browser drew the last one. What the buttons do is the panel's (its state machine);
the tab draws what it is told.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from workbench.core.defines import define_lines
from workbench.core.picks import PickRecord, search_best_pick
from workbench.core.records import TrialResult
from workbench.ui.agent_tab import guarded_button
from workbench.ui.devices import DeviceView
from workbench.ui.figures import (
    AxisSpec,
    TrialTable,
    axes_for,
    build_figure,
    build_parcoords_figure,
    figure_layout,
    layout_updates,
    runtime_scale,
    trace_updates,
)
from workbench.ui.panel_text import (
    Progress,
    eta_words,
    failures_html,
    progress_of,
)
from workbench.ui.state_view import RunClock, RunView
from workbench.ui.throttle import CoalescingPusher
from workbench.ui.trials_table import SORT_KEYS, STATUS_FILTERS, TableQuery, trials_html

RUNNING_STATES = ("running", "paused", "stopping")


def pick_defines(pick: PickRecord) -> str:
    """``pick`` as a ``#define`` block (one line per parameter) under a comment saying how
    it was decided: the confirmed pick and its rule, or the search's best and why no
    confirmation decided it."""
    how = (f"confirmed pick ({pick.rule})" if not pick.is_fallback
           else f"the search's best, not confirmed: {pick.fallback_reason or pick.rule}")
    lines = [f"// {pick.shape} {pick.dtype}: {pick.median_us:.3f} us, {how}",
             *define_lines(pick.config)]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=16)
def _empty_figures_json(axes: tuple[AxisSpec, ...], title: str) -> tuple[str, str]:
    """The run view's empty figure and parallel coordinates, as JSON text, for these axes
    and title. Plotly validates every property while a figure is built (0.13-0.4 s CPU for
    a sample's), and each panel of a session (a notebook's, a test's) builds the same
    ones; every view parses the text afresh, so none shares a dict with another."""
    return (build_figure(axes, title=title, parcoords=False).to_json(),
            build_parcoords_figure(axes).to_json())


class SearchTab:
    """Strategy, budget, Launch/Pause/Stop, the runtime-axis toggle, the run view (progress,
    charts, trial table, failures), the best config's copy button and per-device progress.

    ``title_prefix()`` gives "kernel · template version" for the charts' title (it changes
    when the template does); ``status()`` the panel's run state; ``launch``, ``pause`` and
    ``stop`` are the buttons' (guarded) callbacks; ``on_error`` shows a failed push.
    """

    def __init__(self, backend: Any, *, title_prefix: Callable[[], str],
                 status: Callable[[], str], launch: Callable[[], None],
                 pause: Callable[[], None], stop: Callable[[], None],
                 widen: Callable[[], None] | None = None,
                 on_error: Callable[[BaseException], None],
                 problem: tuple[str, str], max_pushes_per_s: float = 4.0) -> None:
        import ipywidgets as w

        from workbench.ui.clipboard import CopyButton

        self._title_prefix = title_prefix
        self._status = status
        self._backend = backend
        # the stored pick of the problem shown, read once per (problem, run state): a tune
        # stores its pick as it ends, and the pushes of a running search read no store
        self._pick_read: tuple[tuple[str, str], str] | None = None
        self._stored_pick: PickRecord | None = None
        self.clock = RunClock()  # running time without pauses: the ETA's base
        self.budget_evaluations = 0  # the budget of the search shown (0: none of this panel)
        self.done_at_launch = 0
        self.lock = threading.Lock()  # guards the table (events arrive on the search thread)
        self.problem = problem  # the (shape, dtype) the table and charts hold
        self.axes: tuple[AxisSpec, ...] = tuple(axes_for(backend.params))
        self.layout = figure_layout(self.axes)
        self.table = TrialTable([a.name for a in self.axes])
        self.query = TableQuery(limit=10)
        self.shown_title = self.title()
        self._shown_axes: dict[str, Any] = {}  # the runtime axes' last properties sent

        self.strategy = w.Dropdown(options=list(backend.strategies), description="strategy")
        self.strategy.add_class("wb-strategy")
        self.budget = w.BoundedIntText(value=64, min=1, max=1_000_000, description="budget")
        self.budget.add_class("wb-budget")
        self.launch_button = guarded_button("Launch", "wb-launch", launch, "primary")
        self.pause_button = guarded_button("Pause", "wb-pause", pause, "warning")
        self.stop_button = guarded_button("Stop", "wb-stop", stop, "danger")
        # where the fastest configs sit on a range edge: extend those ranges along their kind
        # and measure `budget` more (the same search, every stored trial kept)
        self.widen_button = guarded_button("Widen edges", "wb-widen", widen or (lambda: None),
                                           "info")
        self.widen_button.tooltip = ("extend the ranges the fastest configs sit on the edge "
                                     "of (pow2 doubles, int steps, within the device's "
                                     "limits) and measure `budget` more configs")
        self.y_scale = w.ToggleButtons(options=["auto", "log", "linear"], value="auto",
                                       description="runtime axis",
                                       style={"button_width": "60px",
                                              "description_width": "initial"},
                                       tooltips=["log when the runtimes spread over more "
                                                 "than 10x", "log", "linear"])
        self.y_scale.add_class("wb-yscale")
        self._on_error = on_error
        self.run_view = self._new_run_view()
        self.copy_button = CopyButton()
        self.copy_button.add_class("wb-copy")
        self.devices = DeviceView.for_backend(backend)  # per-device progress on a cluster
        # beside the buttons: why Launch did nothing (no runner, nothing to measure), so the
        # answer is where the click was, not only in the message line at the panel's top
        self.launch_note = w.HTML()
        self.launch_note.add_class("wb-launch-note")
        # the last tune's result as a compact table (:mod:`workbench.ui.tune_summary`)
        self.summary = w.HTML()
        self.summary.add_class("wb-summary-box")
        self.widget = w.VBox([
            w.HBox([self.strategy, self.budget]),
            w.HBox([self.launch_button, self.pause_button, self.stop_button,
                    self.widen_button, self.launch_note]),
            self.summary, self.y_scale, self.run_view, self.copy_button, self.devices.widget],
            layout=w.Layout(width="100%"))
        self.widget.add_class("wb-tab-search")
        self.pusher = CoalescingPusher(self.push, max_per_s=max_pushes_per_s,
                                       on_error=on_error, gate=self._browser_gate)
        self.y_scale.observe(lambda _c: self.pusher.notify(urgent=True), names="value")

    def _new_run_view(self, state: dict[str, Any] | None = None) -> RunView:
        """A run view of the current axes and query (``state``: the text it starts with),
        wired to this tab: hello, deafness and the table's controls."""
        import ipywidgets as w

        view = RunView(**self._figures(), state=dict(state or {}),
                       layout=w.Layout(width="100%"))
        view.add_class("wb-run-view")
        view.on_hello = self.resend
        view.on_deaf = self.replace_run_view
        view.on_query = self._query_message
        return view

    def replace_run_view(self) -> None:
        """The browser's model of the run view drops what the kernel sends (anywidget gave
        up setting it up: :mod:`workbench.ui.state_view`): a new view in its place, its
        whole state in its opening message and the charts pushed again."""
        with self.pusher.lock, self.lock:
            old = self.run_view
            # the text without the old model's message number: the new one counts from 0
            self.run_view = self._new_run_view(
                state={k: v for k, v in old.state.items() if k != "seq"})
            self.widget.children = tuple(self.run_view if c is old else c
                                         for c in self.widget.children)
            self._shown_axes, self.shown_title = {}, ""
        old.close()
        self.pusher.notify()

    def _query_message(self, query: Any) -> None:
        """The table's controls changed in the browser; an error is shown, never raised."""
        try:
            self.set_query(query)
        except Exception as exc:  # the panel's message line shows it
            self._on_error(exc)

    def resend(self) -> None:
        """Push the whole state again (a view that came up asks for it: what the kernel
        sent before the page's model listened was dropped); the axes and title too, which
        a push sends only when they change."""
        with self.pusher.lock, self.lock:
            self._shown_axes, self.shown_title = {}, ""
        self.pusher.notify()

    # --- what the charts are drawn for
    def title(self) -> str:
        """What the charts show: the kernel, template version, shape and dtype of the table."""
        shape, dtype = self.problem
        return f"{self._title_prefix()} · {shape} · {dtype}"

    def _figures(self) -> dict[str, Any]:
        """The run view's empty figures, table controls and query for the current axes."""
        names = [a.name for a in self.axes]
        figure, parcoords = _empty_figures_json(self.axes, self.shown_title)
        return {
            "figure": json.loads(figure),
            "parcoords": {**json.loads(parcoords), "trace": self.layout.parcoords_trace},
            "table_options": {"sort_keys": [*SORT_KEYS, *names],
                              "statuses": list(STATUS_FILTERS), "limits": [10, 50, 200]},
            "query": dataclasses.asdict(self.query)}

    def retemplate(self, params: Sequence[Any]) -> bool:
        """Follow another template's parameters (or edited ranges): new axes, an empty
        figure built for them and, when the names changed, an empty table and a query
        that names none of the old ones. False when the axes are the same (nothing sent)."""
        axes = tuple(axes_for(params))
        if axes == self.axes:
            return False
        names = [a.name for a in axes]
        # under the pusher's lock too: no push of the old axes goes out after the new figure
        with self.pusher.lock, self.lock:
            self.axes, self.layout = axes, figure_layout(axes)
            if list(self.table.param_names) != names:
                self.table = TrialTable(names)
                self.query = TableQuery(limit=self.query.limit)
            self.shown_title, self._shown_axes = self.title(), {}
            with self.run_view.hold_sync():  # one message: figures, controls and query
                for key, value in self._figures().items():
                    setattr(self.run_view, key, value)
        self.pusher.notify()
        return True

    # --- the table
    def add(self, result: TrialResult) -> None:
        with self.lock:
            self.table.add(result)
        self.pusher.notify()

    def load(self, problem: tuple[str, str], results: Sequence[TrialResult],
             baseline_us: float | None) -> None:
        """The table becomes ``results`` of ``problem`` (stored trials, a report's)."""
        with self.lock:
            self.problem = problem
            self.table.clear()
            self.table.baseline_us = baseline_us
            self.table.extend(results)
        self.pusher.notify()

    def set_query(self, query: Any) -> None:
        """The table's controls changed (a ``query`` message from the browser, or a test):
        the table is redrawn at once; a bad filter is shown in the table, not raised."""
        fields = {f.name for f in dataclasses.fields(TableQuery)}
        given = {k: v for k, v in dict(query).items() if k in fields}
        self.query = dataclasses.replace(self.query, **given)
        with self.lock:
            data = self.table.snapshot()
        self.run_view.show(table_html=trials_html(data, self.query))

    def progress(self) -> Progress:
        with self.lock:
            return progress_of(self.table.results, self.budget_evaluations,
                               exhausted=self._status() == "finished (exhausted)")

    def start_run(self, budget: int) -> None:
        """A search of ``budget`` evaluations starts from the table as it is now."""
        self.budget_evaluations = budget
        self.done_at_launch = self.progress().done
        self.clock.start()

    # --- on screen
    def show_status(self, status: str) -> None:
        """The run state and the count now: a small message that never waits for a chart."""
        progress = self.progress()
        self.run_view.show(status=status, done=progress.done, progress_label=progress.label)

    def update_buttons(self, status: str) -> None:
        running = status in RUNNING_STATES
        self.launch_button.disabled = self.widen_button.disabled = running
        self.pause_button.disabled = not running
        self.pause_button.description = "Resume" if status == "paused" else "Pause"
        self.stop_button.disabled = not running or status == "stopping"

    def _browser_gate(self) -> None:
        """Before a push: wait (at most 5 s) until the browser drew the last chart, then
        leave it idle as long as that draw took (at most 2 s), so a loaded browser draws
        fewer frames and has time for the user's clicks. Nothing waits without a browser."""
        self.run_view.wait_drawn(5.0)
        time.sleep(min(self.run_view.draw_s, 2.0))

    def push(self) -> None:
        """Send everything that depends on trials as ONE message (called by the pusher,
        at most 4 times a second, after the browser drew the last one)."""
        status = self._status()
        with self.lock:
            data = self.table.snapshot()
            results = list(self.table.results)
            layout = self.layout
        updates = trace_updates(data, layout)
        scale = (runtime_scale(data.median_us) if self.y_scale.value == "auto"
                 else str(self.y_scale.value))
        runtime_axes = layout_updates(layout, scale, data.median_us)
        axes = dict(runtime_axes) if runtime_axes != self._shown_axes else {}
        title = self.title()
        if title != self.shown_title:
            axes["title"] = {"text": title}
        progress = progress_of(results, self.budget_evaluations,
                               exhausted=status == "finished (exhausted)")
        times = np.where(np.isnan(data.median_us), np.inf, data.median_us)
        best = results[int(np.argmin(times))] if np.isfinite(times).any() else None
        eta = self.clock.eta_s(progress.done - self.done_at_launch,
                               max(self.budget_evaluations - progress.done, 0))
        eta_text = eta_words(status, self.clock.running_s, eta, data.count)
        self.run_view.push(
            updates, axes, status=status, done=progress.done, budget=progress.budget,
            progress_label=progress.label, eta=eta_text,
            best=f"best {best.median_us:.3f} µs" if best is not None and best.median_us else "",
            table_html=trials_html(data, self.query), failures_html=failures_html(results),
            empty_html="" if data.count else html.escape(self._no_trial_text()))
        self._shown_axes, self.shown_title = runtime_axes, title
        self.devices.update(results, self.clock.running_s or None)
        self.copy_button.text = self._export_text(status, results)

    def _export_text(self, status: str, results: Sequence[TrialResult]) -> str:
        """The copy button's ``#define`` block: the pick the store holds for the problem
        shown (:meth:`~workbench.api.Workbench.pick`, what the header and JSON exports
        write), else the search's fastest trial of the table, saying that no confirmation
        ran. Empty with neither."""
        key = (self.problem, status)
        if key != self._pick_read:
            self._pick_read = key
            self._stored_pick = self._backend.pick(*self.problem)
        pick = self._stored_pick
        if pick is None or pick.is_fallback:  # the table is fresher than a read fallback
            pick = search_best_pick(results, kernel=self._backend.kernel_name,
                                    template_version=self._backend.template_version,
                                    reason=(pick.fallback_reason if pick is not None
                                            else "no tune stored a pick yet"))
        return pick_defines(pick) if pick is not None else ""

    def _no_trial_text(self) -> str:
        """What replaces the charts while they have no trial to show."""
        shape, dtype = self.problem
        return (f"no trial stored for {shape} {dtype} with this template yet: Launch a search "
                "to fill the charts")

    def close(self) -> None:
        self.pusher.close(flush=False)
