"""The JupyterLab panel: one ipywidgets tree around ONE run view (charts, progress, table).

The panel talks to a :class:`PanelBackend` (``workbench.api.Workbench`` implements it) and
listens to the backend's event bus. Events arrive on the search thread; they only append to
a :class:`~workbench.ui.figures.TrialTable` and mark the view stale. A
:class:`~workbench.ui.throttle.CoalescingPusher` sends the charts, progress, ETA and tables
as ONE message of the :class:`~workbench.ui.state_view.RunView` at most 4 times a second,
and only once the browser drew the last one. Pause, Resume and Stop are answered at once
with a small state message that never waits behind a chart. Every callback is guarded: an error
becomes a readable message in ``.wb-message``, never a traceback that kills the widget.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import json
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from workbench.core.errors import WorkbenchError
from workbench.core.records import Status, TrialResult
from workbench.ui.agent_tab import AgentTab, guarded_button
from workbench.ui.devices import DeviceView
from workbench.ui.figures import (
    TrialTable,
    axes_for,
    build_figure,
    build_parcoords_figure,
    figure_layout,
    layout_updates,
    runtime_scale,
    trace_updates,
)
from workbench.ui.params_editor import SpaceSummary
from workbench.ui.state_view import RunClock, RunView
from workbench.ui.throttle import CoalescingPusher
from workbench.ui.trials_table import SORT_KEYS, STATUS_FILTERS, TableQuery, trials_html


class PanelBackend(Protocol):
    """What the panel needs from the session behind it."""

    kernel_name: str
    events: Any  # workbench.core.events.EventBus

    @property
    def runner_description(self) -> str: ...
    @property
    def template_version(self) -> str: ...
    @property
    def replay_problem(self) -> str: ...
    @property
    def shape_names(self) -> Sequence[str]: ...
    @property
    def dtypes(self) -> Sequence[str]: ...
    @property
    def strategies(self) -> Sequence[str]: ...
    @property
    def params(self) -> Sequence[Any]: ...
    @property
    def baseline_source(self) -> str: ...
    @property
    def template_source(self) -> str: ...
    def summarize_space(self, params: Sequence[Any], shape: str, dtype: str) -> SpaceSummary: ...
    def set_params(self, params: Sequence[Any]) -> None: ...
    def check_compile(self, before: Sequence[Any], after: Sequence[Any], shape: str,
                      dtype: str) -> Any: ...
    def baseline_us(self, shape: str, dtype: str) -> float | None: ...
    def tune(self, shape: str, dtype: str, strategy: str, budget: int) -> Any: ...
    def results(self, shape: str, dtype: str) -> Sequence[TrialResult]: ...
    def pause_search(self) -> None: ...
    def resume_search(self) -> None: ...
    def stop_search(self) -> None: ...
    def propose_template(self) -> str: ...
    def review(self, decision: str, note: str) -> str: ...
    def review_status(self) -> str: ...
    def agent_iterations(self) -> Sequence[Any]: ...
    def agent_control(self) -> Any: ...  # workbench.agent.control.AgentControl
    def export(self, what: str, path: str, shape: str, dtype: str) -> str: ...


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


def config_defines(result: TrialResult) -> str:
    """The best config as a ``#define`` block (one line per parameter)."""
    lines = [f"// {result.shape} {result.dtype}: {result.median_us:.3f} us" if result.median_us
             else f"// {result.shape} {result.dtype}"]
    for key, value in result.config.items():
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        lines.append(f"#define {key} {text}")
    return "\n".join(lines) + "\n"


def failures_html(results: Sequence[TrialResult], limit: int = 5) -> str:
    """The most recent failures with their reason and compiler-log excerpt."""
    failed = [r for r in results if r.status is not Status.OK][-limit:]
    if not failed:
        return ""
    items = []
    for r in reversed(failed):
        log = f"<pre>{html.escape(r.log_excerpt[:1200])}</pre>" if r.log_excerpt else ""
        items.append(f"<li><b>{r.status.value}</b> {html.escape(str(dict(r.config)))}: "
                     f"{html.escape(r.reason)}{log}</li>")
    return f"<b>recent failures and pruned configs</b><ul>{''.join(items)}</ul>"


class WorkbenchPanel:
    """Builds and drives the panel; ``.widget`` is the one widget to display."""

    def __init__(self, backend: PanelBackend, *, max_pushes_per_s: float = 4.0) -> None:
        import ipywidgets as w

        from workbench.ui.diff import side_by_side_diff_html
        from workbench.ui.params_editor import ParamsEditor

        self.backend = backend
        self._state = "idle"
        self._state_lock = threading.RLock()  # a click's answer never overwrites the end
        self._budget = 0
        self.clock = RunClock()  # running time without pauses: the ETA's base
        self._done_at_launch = 0
        self._table_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._own_tune = False  # the running tune is this panel's Launch (not a script's)
        self._code_tune = False  # the running tune came from code (wb.tune in a cell)
        self._table_problem = ("", "")  # the (shape, dtype) the table and charts hold
        self._shown_title = ""
        self.last_report: Any = None
        param_names = [p.name for p in backend.params]
        self.table = TrialTable(param_names)
        self.axes = axes_for(backend.params)
        self.layout = figure_layout(self.axes)

        self.message = w.HTML()
        self.message.add_class("wb-message")
        self.header = w.HTML()
        self.header.add_class("wb-header")

        # --- template tab
        self.diff_view = w.HTML(side_by_side_diff_html(backend.baseline_source,
                                                       backend.template_source,
                                                       params=backend.params))
        self.diff_view.add_class("wb-diff-view")
        self.shape = w.Dropdown(options=list(backend.shape_names), description="shape")
        self.shape.add_class("wb-shape")
        self.dtype = w.Dropdown(options=list(backend.dtypes), description="dtype")
        self.dtype.add_class("wb-dtype")
        self.editor = ParamsEditor(
            backend.params,
            summarize=lambda ps: backend.summarize_space(ps, self.shape.value, self.dtype.value),
            on_change=self._guard(self._params_changed),
            check_compile=lambda before, after: backend.check_compile(
                before, after, self.shape.value, self.dtype.value))
        self.review_note = w.Textarea(placeholder="review note", layout=w.Layout(width="400px"))
        self.review_note.add_class("wb-review-note")
        self.approve_button = self._button("Approve", "wb-approve", self._approve, "success")
        self.reject_button = self._button("Reject", "wb-reject", self._reject, "danger")
        self.propose_button = self._button("Propose", "wb-propose", self._propose, "")
        self.review_status = w.HTML()
        self.review_status.add_class("wb-review-status")
        template_tab = w.VBox([
            self.diff_view, w.HTML("<b>parameters</b> (edit ranges; validated as you type)"),
            self.editor.widget,
            w.HBox([self.review_note, w.VBox([self.approve_button, self.reject_button,
                                              self.propose_button])]),
            self.review_status])
        template_tab.add_class("wb-tab-template")

        # --- search tab
        self.strategy = w.Dropdown(options=list(backend.strategies), description="strategy")
        self.strategy.add_class("wb-strategy")
        self.budget = w.BoundedIntText(value=64, min=1, max=1_000_000, description="budget")
        self.budget.add_class("wb-budget")
        self.launch_button = self._button("Launch", "wb-launch", self._launch, "primary")
        self.pause_button = self._button("Pause", "wb-pause", self._pause, "warning")
        self.stop_button = self._button("Stop", "wb-stop", self._stop, "danger")
        self.y_scale = w.ToggleButtons(options=["auto", "log", "linear"], value="auto",
                                       description="runtime axis",
                                       style={"button_width": "60px",
                                              "description_width": "initial"},
                                       tooltips=["log when the runtimes spread over more "
                                                 "than 10x", "log", "linear"])
        self.y_scale.add_class("wb-yscale")
        self.query = TableQuery(limit=10)
        self._table_problem = (str(self.shape.value), str(self.dtype.value))
        self._shown_title = self.chart_title()
        self.run_view = RunView(
            figure=json.loads(build_figure(self.axes, title=self._shown_title,
                                           parcoords=False).to_json()),
            parcoords={**json.loads(build_parcoords_figure(self.axes).to_json()),
                       "trace": self.layout.parcoords_trace},
            table_options={"sort_keys": [*SORT_KEYS, *param_names],
                           "statuses": list(STATUS_FILTERS), "limits": [10, 50, 200]},
            query=dataclasses.asdict(self.query), layout=w.Layout(width="100%"))
        self.run_view.add_class("wb-run-view")
        self.run_view.on_query = self._guard(self._query_changed)
        from workbench.ui.clipboard import CopyButton

        self.copy_button = CopyButton()
        self.copy_button.add_class("wb-copy")
        self.devices = DeviceView.for_backend(backend)  # per-device progress on a cluster
        search_tab = w.VBox([
            w.HBox([self.strategy, self.budget]),
            w.HBox([self.launch_button, self.pause_button, self.stop_button]),
            self.y_scale,
            self.run_view,
            self.copy_button,
            self.devices.widget], layout=w.Layout(width="100%"))
        search_tab.add_class("wb-tab-search")

        # --- agent tab
        self.agent = AgentTab(backend, problem=lambda: (self.shape.value, self.dtype.value),
                              busy=self._agent_busy, guard=self._guard, info=self._info)
        agent_tab = self.agent.widget

        # --- export tab
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

        self.tabs = w.Tab(children=[template_tab, search_tab, agent_tab, export_tab],
                          layout=w.Layout(width="100%"))
        for i, title in enumerate(["Template", "Search", "Agent", "Export"]):
            self.tabs.set_title(i, title)
        self.tabs.selected_index = 1
        self.tabs.add_class("wb-tabs")
        self.widget = w.VBox([self.header, self.message, w.HBox([self.shape, self.dtype]),
                              self.tabs], layout=w.Layout(width="100%"))
        self.widget.add_class("wb-panel")

        self._shown_scale = "linear"  # build_figure's axes
        self.pusher = CoalescingPusher(self._push, max_per_s=max_pushes_per_s,
                                       on_error=self._show_error, gate=self._browser_gate)
        self._unsubscribe = backend.events.subscribe(self._on_event)
        self.y_scale.observe(lambda _c: self.pusher.notify(), names="value")
        self.shape.observe(self._guard(self._problem_changed), names="value")
        self.dtype.observe(self._guard(self._problem_changed), names="value")
        self._guard(self._load_stored)(self.shape.value, self.dtype.value)
        self._refresh_header()
        self._guard(self._refresh_review)()
        self._update_buttons()

    # --- plumbing
    def _browser_gate(self) -> None:
        """Before a push: wait (at most 5 s) until the browser drew the last chart, then
        leave it idle as long as that draw took (at most 2 s), so a loaded browser draws
        fewer frames and has time for the user's clicks. Nothing waits without a browser."""
        self.run_view.wait_drawn(5.0)
        time.sleep(min(self.run_view.draw_s, 2.0))

    def table_query(self) -> TableQuery:
        """What the trial table's controls ask for."""
        return self.query

    def _query_changed(self, query: Any) -> None:
        """The table's controls changed (a ``query`` message from the browser, or a test):
        the table is redrawn at once; a bad filter is shown in the table, not raised."""
        fields = {f.name for f in dataclasses.fields(TableQuery)}
        given = {k: v for k, v in dict(query).items() if k in fields}
        self.query = dataclasses.replace(self.query, **given)
        with self._table_lock:
            data = self.table.snapshot()
        self.run_view.show(table_html=trials_html(data, self.query))

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
        version = self._version()
        warning = (f'<div class="wb-replay-problem" style="color:#b00020">cannot measure '
                   f"here: {html.escape(problem)}</div>" if problem else "")
        self.header.value = warning + (
            f'<div><b class="wb-kernel">{html.escape(self.backend.kernel_name)}</b> · '
            f'<span class="wb-device">{html.escape(device)}</span> · '
            f'template <code class="wb-version">{html.escape(version)}</code> · '
            f'shape <code class="wb-header-shape">{html.escape(str(self.shape.value))}</code> · '
            f'dtype <code class="wb-header-dtype">{html.escape(str(self.dtype.value))}</code> · '
            f'status <b class="wb-status">{html.escape(self._state)}</b></div>')

    def _version(self) -> str:
        try:
            return str(self.backend.template_version)
        except Exception as exc:  # shown, never raised into the widget
            return f"unknown ({exc})"

    def chart_title(self) -> str:
        """What the charts show: the kernel, template version, shape and dtype of the table."""
        shape, dtype = self._table_problem
        return f"{self.backend.kernel_name} · {self._version()} · {shape} · {dtype}"

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
            with self._table_lock:
                done = len(self.table)
            self.run_view.show(status=state, done=done)
            return True

    def _update_buttons(self) -> None:
        running = self._state in ("running", "paused", "stopping")
        # the problem shown is the one searched: no switching it under a running search
        self.shape.disabled = self.dtype.disabled = running
        self.launch_button.disabled = running
        self.pause_button.disabled = not running
        self.pause_button.description = "Resume" if self._state == "paused" else "Pause"
        self.stop_button.disabled = not running or self._state == "stopping"

    # --- events (search thread)
    def _on_event(self, event: Any) -> None:
        from workbench.core import events as ev

        if isinstance(event, ev.TrialFinished):
            with self._table_lock:
                self.table.add(event.result)
            self.pusher.notify()
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
        elif isinstance(event, ev.ErrorEvent):
            detail = html.escape(event.detail[-3000:])
            self.message.value = (f'<div class="wb-error" style="color:#b00020"><b>search error</b>: '
                                  f"{html.escape(event.message)}<details><summary>details</summary>"
                                  f"<pre>{detail}</pre></details></div>")
            self._set_state("error")

    def _push(self) -> None:
        """Send everything that depends on trials as ONE message (called by the pusher,
        at most 4 times a second, after the browser drew the last one)."""
        with self._table_lock:
            data = self.table.snapshot()
            results = list(self.table.results)
        updates = trace_updates(data, self.layout)
        scale = (runtime_scale(data.median_us) if self.y_scale.value == "auto"
                 else str(self.y_scale.value))
        axes = dict(layout_updates(self.layout, scale)) if scale != self._shown_scale else {}
        title = self.chart_title()
        if title != self._shown_title:
            axes["title"] = {"text": title}
        done = data.count
        times = np.where(np.isnan(data.median_us), np.inf, data.median_us)
        best = results[int(np.argmin(times))] if np.isfinite(times).any() else None
        eta = self.clock.eta_s(done - self._done_at_launch, max(self._budget - done, 0))
        if eta is not None and self._state in ("running", "paused"):
            eta_text = (f"{self.clock.running_s:.0f} s running, ETA {eta:.0f} s"
                        + (" (paused)" if self._state == "paused" else ""))
        else:
            eta_text = f"{done} evaluated" if done else ""
        self.run_view.push(
            updates, axes, status=self._state, done=done, budget=self._budget, eta=eta_text,
            best=f"best {best.median_us:.3f} µs" if best is not None and best.median_us else "",
            table_html=trials_html(data, self.query), failures_html=failures_html(results),
            empty_html="" if done else html.escape(self._no_trial_text()),
            # no budget: nothing of this panel searches this problem; say what is stored
            progress_label="" if self._budget else f"{done} stored")
        self._shown_scale, self._shown_title = scale, title
        self.devices.update(results, self.clock.running_s or None)
        if best is not None:
            self.copy_button.text = config_defines(best)

    def _no_trial_text(self) -> str:
        """What replaces the charts while they have no trial to show."""
        shape, dtype = self._table_problem
        return (f"no trial stored for {shape} {dtype} with this template yet: Launch a search "
                "to fill the charts")

    # --- callbacks (kernel thread)
    def _launch(self) -> None:
        """Run the backend's one tune call on a worker thread; the table starts from every
        stored trial of (shape, dtype) and ends with the report's, read from the store."""
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
        shape, dtype = self.shape.value, self.dtype.value
        self._budget = int(self.budget.value)
        self._load_stored(shape, dtype)
        self.message.value = ""
        with self._table_lock:
            self._done_at_launch = len(self.table)
        self.clock.start()
        self._own_tune = True
        self._set_state("running")
        self._worker = threading.Thread(
            target=self._tune, args=(shape, dtype, str(self.strategy.value), self._budget),
            name="workbench-panel-tune", daemon=True)
        self._worker.start()

    def _problem_changed(self, _change: Any = None) -> None:
        self.editor.refresh()
        if self._state not in ("running", "paused", "stopping"):
            self._budget = 0  # the last search's budget was another problem's
            self._load_stored(self.shape.value, self.dtype.value)
        self._refresh_header()

    def _tune_started(self, event: Any) -> None:
        """A tune began. One the panel did not launch (``wb.tune(...)`` in a cell) switches
        the panel to what it runs: dropdowns, header, table, charts and progress."""
        if self._own_tune:
            return
        self._code_tune = True
        self._budget = int(event.budget_evaluations or 0)
        self._set_state("running")  # first: the dropdown change below must not reload
        self.shape.value, self.dtype.value = event.shape, event.dtype
        self._load_stored(event.shape, event.dtype)
        with self._table_lock:
            self._done_at_launch = len(self.table)
        self.clock.start()
        self._refresh_header()
        self._info(f"a tune started from code: {event.shape} {event.dtype}, "
                   f"{event.strategy}, template {event.template_version}")

    def _tune_ended(self, event: Any) -> None:
        """A code-driven tune ended: the table becomes its stored trials, as after Launch."""
        if not self._code_tune:
            return
        self._code_tune = False
        self.clock.stop()
        self._load_stored(event.shape, event.dtype)
        self.pusher.flush()
        if event.error:
            self._set_state("error")
            self._info(f"the tune from code failed: {event.error}")
        else:
            self._set_state(f"finished ({event.reason})")
            self._info(f"the tune from code ({event.shape} {event.dtype}, template "
                       f"{event.template_version}) finished: {event.reason}")

    def _load_stored(self, shape: str, dtype: str) -> None:
        baseline = self.backend.baseline_us(shape, dtype)
        stored = list(self.backend.results(shape, dtype))
        with self._table_lock:
            self._table_problem = (shape, dtype)
            self.table.clear()
            self.table.baseline_us = baseline
            self.table.extend(stored)
        self.pusher.notify()

    def _tune(self, shape: str, dtype: str, strategy: str, budget: int) -> None:
        """The worker thread: the same call a script makes; errors are shown, not raised."""
        try:
            report = self.backend.tune(shape, dtype, strategy, budget)
        except Exception as exc:
            self._own_tune = False
            self.clock.stop()
            self._set_state("error")
            self._show_error(exc)
            return
        self._own_tune = False
        results = list(getattr(report, "results", ()))
        with self._table_lock:
            self._table_problem = (shape, dtype)
            self.table.clear()
            self.table.baseline_us = getattr(report, "baseline_us", None)
            self.table.extend(results)
        self.last_report = report
        self.clock.stop()
        self.pusher.flush()
        self._set_state(f"finished ({getattr(report, 'reason', 'done')})")
        summary = getattr(report, "summary", None)
        self._info(summary() if callable(summary) else "search finished")

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
            self.clock.resume()
            self._set_state("running", only_from=("paused",))
        else:
            self.backend.pause_search()
            self.clock.pause()
            self._set_state("paused", only_from=("running",))
        self.pusher.notify()

    def _stop(self) -> None:
        self.backend.stop_search()
        self._set_state("stopping", only_from=("running", "paused"))
        self.pusher.notify()

    def _approve(self) -> None:
        self._info(self.backend.review("approved", self.review_note.value))
        self._refresh_review()

    def _reject(self) -> None:
        self._info(self.backend.review("rejected", self.review_note.value))
        self._refresh_review()

    def _propose(self) -> None:
        from workbench.ui.diff import side_by_side_diff_html

        note = self.backend.propose_template()
        self.diff_view.value = side_by_side_diff_html(self.backend.baseline_source,
                                                      self.backend.template_source,
                                                      right_title="proposed template",
                                                      params=self.backend.params)
        self._info(note)
        self._refresh_review()
        self._refresh_header()  # a new template may be one the replay cannot measure

    def _params_changed(self, params: Sequence[Any]) -> None:
        """New ranges make a new template version: it needs its own approval to be tuned
        (the review status says so and the Approve button offers it)."""
        self.backend.set_params(params)
        self._refresh_review()

    def _refresh_review(self) -> None:
        self.review_status.value = html.escape(self.backend.review_status())

    def _agent_busy(self) -> str:
        """Why the agent may not start now ("" when it may)."""
        if self._worker is not None and self._worker.is_alive():
            return "a search is running; stop it first"
        problem = self.backend.replay_problem
        return f"nothing to measure: {problem}" if problem else ""

    def _export(self, what: str) -> Callable[[], None]:
        def run() -> None:
            self.export_output.value = self.backend.export(
                what, self.export_path.value, self.shape.value, self.dtype.value)
        return run

    def close(self) -> None:
        """Unsubscribe and stop the pusher thread."""
        self._unsubscribe()
        self.agent.close()
        self.pusher.close(flush=False)
