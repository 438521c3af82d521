"""The JupyterLab panel: one ipywidgets tree around ONE run view (charts, progress, table).

The panel talks to a :class:`PanelBackend` (``workbench.api.Workbench`` implements it) and
listens to the backend's event bus. Events arrive on the search thread; they only append to
the Search tab's trial table and mark the view stale; the tab's pusher sends the charts,
progress, ETA and tables as ONE message at most 4 times a second, once the browser drew the
last one (:mod:`workbench.ui.search_tab`). Pause, Resume and Stop are answered at once with a
small state message that never waits behind a chart. Every callback is guarded: an error
becomes a readable message in ``.wb-message``, never a traceback that kills the widget.

This module is the panel's state machine (idle, running, paused, stopping, finished,
error) and its wiring; the tabs are :mod:`~workbench.ui.template_tab`,
:mod:`~workbench.ui.search_tab` and :mod:`~workbench.ui.agent_tab`, the text they show
:mod:`~workbench.ui.panel_text`. Whenever the backend tunes another template (Propose,
Approve, a range edit, ``adopt_template`` from code) every part follows it: the editor's
rows, the charts' axes, the header's version.
"""

from __future__ import annotations

import functools
import html
import threading
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.records import Status
from workbench.ui.agent_tab import AgentTab, guarded_button
from workbench.ui.figures import FigureLayout, TrialTable
from workbench.ui.panel_backend import PanelBackend
from workbench.ui.panel_text import (
    HeaderFacts,
    config_defines,
    describe_error,
    failures_html,
    header_html,
    search_error_html,
)
from workbench.ui.search_tab import RUNNING_STATES, SearchTab
from workbench.ui.state_view import RunView
from workbench.ui.template_tab import TemplateTab

__all__ = ["PanelBackend", "WorkbenchPanel", "config_defines", "describe_error",
           "failures_html"]


class WorkbenchPanel:
    """Builds and drives the panel; ``.widget`` is the one widget to display."""

    def __init__(self, backend: PanelBackend, *, max_pushes_per_s: float = 4.0) -> None:
        import ipywidgets as w

        self.backend = backend
        self._state = "idle"
        self._state_lock = threading.RLock()  # a click's answer never overwrites the end
        self._worker: threading.Thread | None = None
        self._own_tune = False  # the running tune is this panel's Launch (not a script's)
        self._code_tune = False  # the running tune came from code (wb.tune in a cell)
        self.last_report: Any = None

        self.message = w.HTML()
        self.message.add_class("wb-message")
        self.header = w.HTML()
        self.header.add_class("wb-header")
        self.shape = w.Dropdown(options=list(backend.shape_names), description="shape")
        self.shape.add_class("wb-shape")
        self.dtype = w.Dropdown(options=list(backend.dtypes), description="dtype")
        self.dtype.add_class("wb-dtype")
        problem = self._problem
        self.template_tab = TemplateTab(backend, problem=problem, guard=self._guard,
                                        info=self._info, on_template=self._follow_template)
        self.search = SearchTab(
            backend, title_prefix=lambda: f"{self.backend.kernel_name} · {self._version()}",
            status=lambda: self._state, launch=self._launch_clicked,
            pause=self._guard(self._pause), stop=self._guard(self._stop),
            widen=self._guard(self._widen), on_error=self._show_error, problem=problem(),
            max_pushes_per_s=max_pushes_per_s)
        self.agent = AgentTab(backend, problem=problem, busy=self._agent_busy,
                              guard=self._guard, info=self._info)
        self.export_path = w.Text(value="workbench_export", description="file stem")
        self.export_path.add_class("wb-export-path")
        self.export_output = w.Textarea(layout=w.Layout(width="600px", height="140px"))
        self.export_output.add_class("wb-export-output")
        export_tab = w.VBox([self.export_path, w.HBox([
            self._button("#define header", "wb-export-header", self._export("header"), ""),
            self._button("JSON", "wb-export-json", self._export("json"), ""),
            self._button("results CSV", "wb-export-csv", self._export("csv"), ""),
            self._button("report notebook", "wb-export-report", self._export("report"), "")]),
            self.export_output])
        export_tab.add_class("wb-tab-export")

        self.tabs = w.Tab(children=[self.template_tab.widget, self.search.widget,
                                    self.agent.widget, export_tab],
                          # auto, not 100 %: the tab's own 2 px border and margin past a
                          # 100 % width gave every panel a horizontal scrollbar
                          layout=w.Layout(width="auto"))
        for i, title in enumerate(["Template", "Search", "Agent", "Export"]):
            self.tabs.set_title(i, title)
        self.tabs.selected_index = 1
        self.tabs.add_class("wb-tabs")
        self.widget = w.VBox([self.header, self.message, w.HBox([self.shape, self.dtype]),
                              self.tabs], layout=w.Layout(width="100%"))
        self.widget.add_class("wb-panel")

        # the tabs' parts under the panel's own names (scripts, tests, benchmarks)
        search, template = self.search, self.template_tab
        self.strategy, self.budget, self.y_scale = search.strategy, search.budget, search.y_scale
        self.launch_button, self.pause_button, self.stop_button, self.widen_button = (
            search.launch_button, search.pause_button, search.stop_button,
            search.widen_button)
        self.copy_button, self.devices = search.copy_button, search.devices
        self.pusher, self.clock = search.pusher, search.clock
        self.diff_view, self.editor, self.review_note = (template.diff_view, template.editor,
                                                         template.review_note)
        self.approve_button, self.reject_button, self.propose_button = (
            template.approve_button, template.reject_button, template.propose_button)
        self.review_status = template.review_status

        self._unsubscribe = backend.events.subscribe(self._on_event)
        self.shape.observe(self._guard(self._problem_changed), names="value")
        self.dtype.observe(self._guard(self._problem_changed), names="value")
        self._guard(self._load_stored)(*problem())
        self._refresh_header()
        self._guard(self.template_tab.refresh_review)()
        self._update_buttons()

    @property
    def run_view(self) -> RunView:
        """The Search tab's run view (a deaf one is replaced: never keep it)."""
        return self.search.run_view

    @property
    def table(self) -> TrialTable:
        """The trials the charts show (replaced when the template's parameters change)."""
        return self.search.table

    @property
    def layout(self) -> FigureLayout:
        """Where each parameter's traces are in the charts (follows the template)."""
        return self.search.layout

    def _problem(self) -> tuple[str, str]:
        return str(self.shape.value), str(self.dtype.value)

    def table_query(self) -> Any:
        """What the trial table's controls ask for (a :class:`TableQuery`)."""
        return self.search.query

    def chart_title(self) -> str:
        """What the charts show: the kernel, template version, shape and dtype of the table."""
        return self.search.title()

    @property
    def _shown_title(self) -> str:
        return self.search.shown_title

    # --- plumbing
    def _button(self, label: str, cls: str, callback: Callable[[], None], style: str) -> Any:
        return guarded_button(label, cls, self._guard(callback), style)

    def _guard(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # every error is shown in place, never raised into the widget
                self._show_error(exc)
                return None
        return wrapper

    def _show_error(self, exc: BaseException) -> None:
        self.message.value = describe_error(exc)

    def _info(self, text: str) -> None:
        self.message.value = f'<div class="wb-info">{html.escape(text)}</div>'

    def _refresh_header(self) -> None:
        try:
            device = self.backend.runner_description
            problem = self.backend.replay_problem
        except Exception as exc:
            device, problem = f"no runner: {exc}", ""
        shape, dtype = self._problem()
        self.header.value = header_html(HeaderFacts(
            kernel=self.backend.kernel_name, device=device, version=self._version(),
            shape=shape, dtype=dtype, status=self._state, replay_problem=problem))

    def _version(self) -> str:
        try:
            return str(self.backend.template_version)
        except Exception as exc:  # shown, never raised into the widget
            return f"unknown ({exc})"

    @property
    def _running(self) -> bool:
        return self._state in RUNNING_STATES

    def _set_state(self, state: str, *, only_from: Sequence[str] = ()) -> bool:
        """Put the run state on screen now (header, buttons, run view: small messages that
        never wait behind a chart); with ``only_from``, only if the state is one of those
        (a Stop answered after the search already finished must not say "stopping")."""
        with self._state_lock:
            if only_from and self._state not in only_from:
                return False
            self._state = state
            self._refresh_header()
            self._update_buttons()
            self.search.show_status(state)
            return True

    def _update_buttons(self) -> None:
        # the problem shown is the one searched: no switching it under a running search
        self.shape.disabled = self.dtype.disabled = self._running
        self.search.update_buttons(self._state)

    # --- events (search thread)
    def _on_event(self, event: Any) -> None:
        from workbench.core import events as ev

        if isinstance(event, ev.TrialFinished):
            self.search.add(event.result)
        elif isinstance(event, ev.IterationFinished):  # an agent run on this bus (scripts)
            self._guard(self.agent.refresh_stored)()
        elif isinstance(event, ev.PhaseChanged):
            self._info(f"{event.phase} {event.detail}".strip())
        elif isinstance(event, ev.SearchFinished):
            self._info(f"search finished: {event.reason}, {event.evaluated} evaluated; "
                       f"reading the stored trials back")
        elif isinstance(event, ev.TuneStarted):
            self._guard(self._tune_started)(event)
        elif isinstance(event, ev.TuneEnded):
            self._guard(self._tune_ended)(event)
        elif isinstance(event, ev.TemplateAdopted):
            self._guard(self._follow_template)()
        elif isinstance(event, ev.ErrorEvent):
            self.message.value = search_error_html(event.message, event.detail)
            self._set_state("error")

    # --- callbacks (kernel thread)
    def _follow_template(self, rows: bool = True) -> None:
        """The backend tunes another template, or other ranges of it: the Template tab
        (diff, editor rows unless ``rows`` is False, review), the charts' axes and, unless a
        search runs, their stored trials, and the header's version all describe it now."""
        self.template_tab.follow(rows=rows)
        self.search.retemplate(self.backend.params)
        if not self._running:
            self._load_stored(*self._problem())
            self.search.summary.value = ""  # the last result was another template's
        with self._state_lock:
            if self._state == "error" and not self._running:
                # the error was the last template's (a failed launch, a refused proposal):
                # the template followed now starts clean
                self._state = "idle"
                self._update_buttons()
                self.search.show_status(self._state)
        self._refresh_header()  # the version; a template the replay cannot measure

    def _widen(self) -> None:
        """Widen edges: the same tune call with one widening round. The search resumes from
        every stored trial (its budget is what is stored, so nothing new is measured before
        the widening); where the fastest configs sit on a range edge, those ranges extend
        along their kind and the search measures the budget box's count more. The widened
        ranges become the session's (a new version: the Template tab asks for its review)."""
        shape, dtype = self._problem()
        stored = sum(1 for r in self.backend.results(shape, dtype)
                     if r.status is not Status.PRUNED)
        if stored == 0:
            raise WorkbenchError("nothing to widen yet: launch a search first; widening "
                                 "extends the ranges its fastest configs sit on",
                                 key="widen", value=0)
        self._launch(widen_budget=int(self.search.budget.value), budget=stored)

    def _launch(self, *, widen_budget: int = 0, budget: int | None = None) -> None:
        """Run the backend's one tune call on a worker thread; the table starts from every
        stored trial of (shape, dtype) and ends with the report's, read from the store.
        ``widen_budget`` > 0: one widening round measuring that many more (``_widen``)."""
        if (self._worker is not None and self._worker.is_alive()) or self._code_tune:
            raise WorkbenchError("a search is already running; stop it first",
                                 key="search", value=self._state)
        if self.agent.running:
            raise WorkbenchError("the agent is running; stop it first (Agent tab)",
                                 key="search", value="agent")
        problem = self.backend.replay_problem
        if problem:  # said before Launch (header), refused at Launch: never "0 evaluated"
            self._refresh_header()
            raise WorkbenchError(f"nothing to measure: {problem}", key="runner",
                                 value=self.backend.runner_description)
        shape, dtype = self._problem()
        if budget is None:
            budget = int(self.search.budget.value)
        self._load_stored(shape, dtype)
        self.message.value = ""
        self.search.start_run(budget + widen_budget)
        self._own_tune = True
        self._set_state("running")
        self._worker = threading.Thread(
            target=self._tune, args=(shape, dtype, str(self.search.strategy.value), budget,
                                     widen_budget),
            name="workbench-panel-tune", daemon=True)
        self._worker.start()

    def _launch_clicked(self) -> None:
        """Launch, answered beside the button: a refusal (no runner, nothing to measure, a
        search already running) is written there as well as in the message line."""
        self.search.launch_note.value = ""
        try:
            self._launch()
        except Exception as exc:  # shown, never raised into the widget
            self._launch_failed(exc)

    def _launch_failed(self, exc: BaseException) -> None:
        self._show_error(exc)
        text = exc.message if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {exc}"
        self.search.launch_note.value = (
            f'<span style="color:#b00020">Launch refused: {html.escape(text[:240])}</span>')

    def _problem_changed(self, _change: Any = None) -> None:
        self.template_tab.editor.refresh()
        if not self._running:
            self.search.budget_evaluations = 0  # the last search's budget was another problem's
            self._load_stored(*self._problem())
        self._refresh_header()

    def _tune_started(self, event: Any) -> None:
        """A tune began. One the panel did not launch (``wb.tune(...)`` in a cell) switches
        the panel to what it runs: dropdowns, header, table, charts and progress."""
        if self._own_tune:
            return
        self._code_tune = True
        self._set_state("running")  # first: the dropdown change below must not reload
        self.shape.value, self.dtype.value = event.shape, event.dtype
        self._load_stored(event.shape, event.dtype)
        self.search.start_run(int(event.budget_evaluations or 0))
        self._refresh_header()
        self._info(f"a tune started from code: {event.shape} {event.dtype}, "
                   f"{event.strategy}, template {event.template_version}")

    def _tune_ended(self, event: Any) -> None:
        """A code-driven tune ended: the table becomes its stored trials, as after Launch."""
        if not self._code_tune:
            return
        self._code_tune = False
        self.search.clock.stop()
        self._load_stored(event.shape, event.dtype)
        self.search.pusher.flush()
        if event.error:
            self._set_state("error")
            self._info(f"the tune from code failed: {event.error}")
        else:
            self._set_state(f"finished ({event.reason})")
            self._info(f"the tune from code ({event.shape} {event.dtype}, template "
                       f"{event.template_version}) finished: {event.reason}")

    def _load_stored(self, shape: str, dtype: str) -> None:
        baseline = self.backend.baseline_us(shape, dtype)
        self.search.load((shape, dtype), list(self.backend.results(shape, dtype)), baseline)

    def _tune(self, shape: str, dtype: str, strategy: str, budget: int,
              widen_budget: int = 0) -> None:
        """The worker thread: the same call a script makes; errors are shown, not raised."""
        try:
            report = (self.backend.tune(shape, dtype, strategy, budget, widen=1,
                                        widen_budget=widen_budget) if widen_budget > 0
                      else self.backend.tune(shape, dtype, strategy, budget))
        except Exception as exc:
            self._own_tune = False
            self.search.clock.stop()
            self._set_state("error")
            self._launch_failed(exc)
            return
        self._own_tune = False
        self.search.load((shape, dtype), list(getattr(report, "results", ())),
                         getattr(report, "baseline_us", None))
        self.last_report = report
        self.search.clock.stop()
        self.search.pusher.flush()
        self._set_state(f"finished ({getattr(report, 'reason', 'done')})")
        self._show_summary(report)

    def _show_summary(self, report: Any) -> None:
        """The tune's result as a compact table under the buttons; a line in the message."""
        from workbench.ui.tune_summary import summary_html, summary_info

        defaults = {p.name: p.default for p in self.backend.params}
        self.search.summary.value = summary_html(summary_info(report, defaults))
        self._info(f"search finished: {getattr(report, 'reason', 'done')} (the result is "
                   f"under the buttons)")

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the worker thread (tests, scripts); True once it has ended."""
        if self._worker is None:
            return True
        self._worker.join(timeout_s)
        return not self._worker.is_alive()

    def _pause(self) -> None:
        """Pause or Resume: the backend first, then the answer on screen at once."""
        if self._state == "paused":
            self.backend.resume_search()
            self.search.clock.resume()
            self._set_state("running", only_from=("paused",))
        else:
            self.backend.pause_search()
            self.search.clock.pause()
            self._set_state("paused", only_from=("running",))
        self.search.pusher.notify()

    def _stop(self) -> None:
        self.backend.stop_search()
        self._set_state("stopping", only_from=("running", "paused"))
        self.search.pusher.notify()

    def _agent_busy(self) -> str:
        """Why the agent may not start now ("" when it may)."""
        if self._worker is not None and self._worker.is_alive():
            return "a search is running; stop it first"
        problem = self.backend.replay_problem
        return f"nothing to measure: {problem}" if problem else ""

    def _export(self, what: str) -> Callable[[], None]:
        def run() -> None:
            self.export_output.value = self.backend.export(what, self.export_path.value,
                                                           *self._problem())
        return run

    def close(self) -> None:
        """Unsubscribe and stop the pusher thread."""
        self._unsubscribe()
        self.agent.close()
        self.search.close()
