"""The panel's Agent tab: start and stop the agent, review what it proposes, and watch its
iteration timeline (plan, diff, approval, best, speedup) fill as the iterations are stored.

The agent's one loop runs on this tab's worker thread through the backend's
:class:`~workbench.agent.control.AgentControl` (the LLM when an endpoint is configured,
else the offline planner and templater). Its events arrive on the control's own bus and are
folded into an :class:`~workbench.ui.agent_timeline.AgentTimeline`; the search charts never
see the agent's trials. Iterations of earlier agent sessions are read from the store.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.ui.agent_timeline import AgentTimeline, timeline_html

STATUS_INTERVAL_S = 0.25  # the live budget line is redrawn at most this often


def iterations_html(iterations: Sequence[Any]) -> str:
    """Stored agent iterations: one row per iteration (plan, version and its diff, the
    approval, best, speedup), read through :class:`~workbench.agent.records.IterationView`."""
    from workbench.agent.records import IterationView

    if not iterations:
        return '<div class="wb-agent-empty">no agent iteration recorded in the store yet</div>'
    rows = []
    for it in iterations:
        view = it if isinstance(it, IterationView) else IterationView.from_stored(it)
        diff = view.diff
        rows.append(
            f"<tr><td>{view.iteration}</td><td>{html.escape(view.state)}</td>"
            f"<td>{html.escape(view.plan)}</td>"
            f'<td class="wb-agent-diff"><details><summary>{html.escape(view.version_id)} '
            f"({len(diff.splitlines())} lines)</summary>"
            f"<pre>{html.escape(diff[:4000])}</pre></details></td>"
            f'<td class="wb-agent-approval">{html.escape(view.approval)}</td>'
            f"<td>{'' if view.best_us is None else f'{view.best_us:.3f} µs'}</td>"
            f"<td>{'' if view.speedup is None else f'{view.speedup:.2f}×'}</td></tr>")
    return ('<table class="wb-agent-table"><tr><th>#</th><th>state</th><th>plan</th>'
            "<th>version and diff</th><th>approval</th><th>best</th><th>speedup</th></tr>"
            f"{''.join(rows)}</table>")


def guarded_button(label: str, cls: str, callback: Callable[[], Any], style: str) -> Any:
    """A button with CSS class ``cls`` that calls ``callback`` (already guarded) on a click."""
    import ipywidgets as w

    button = w.Button(description=label, button_style=style)
    button.add_class(cls)
    button.on_click(lambda _b: callback())
    return button


class AgentTab:
    """The tab's widgets and the worker thread that runs the agent.

    ``problem()`` gives the panel's (shape, dtype); ``busy()`` says why the agent may not
    start now ("" when it may: a search running on the same runner, a replay that cannot
    measure the template); ``guard`` and ``info`` are the panel's error and message helpers.
    """

    def __init__(self, backend: Any, *, problem: Callable[[], tuple[str, str]],
                 busy: Callable[[], str], guard: Callable[..., Any],
                 info: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        import ipywidgets as w

        self.backend = backend
        self._problem = problem
        self._busy = busy
        self._guard = guard
        self._info = info
        self._lock = threading.Lock()
        self.timeline = AgentTimeline()
        self._worker: threading.Thread | None = None
        self._tune: Any | None = None  # the tune step's last TuneBudget ("N more, M stored")
        self._step_trials = 0  # measured (not pruned) trials since that step started
        self._status_at_s = 0.0
        self._clock = clock
        factory = getattr(backend, "agent_control", None)
        self.control: Any = factory() if callable(factory) else None
        self.iterations = w.BoundedIntText(value=3, min=1, max=100, description="iterations",
                                           layout=w.Layout(width="170px"))
        self.iterations.add_class("wb-agent-iterations")
        self.evaluations = w.BoundedIntText(value=16, min=1, max=100_000,
                                            description="more per tune",
                                            # the one budget wording: "N more, M stored"
                                            tooltip=("each tune step measures this many more "
                                                     "configs of its version; the ones "
                                                     "stored are kept and not measured "
                                                     "again (N more, M stored)"),
                                            style={"description_width": "initial"},
                                            layout=w.Layout(width="190px"))
        self.evaluations.add_class("wb-agent-evaluations")
        self.auto_approve = w.Checkbox(value=False, description="auto-approve", indent=False,
                                       layout=w.Layout(width="130px"))
        self.auto_approve.add_class("wb-agent-auto")
        self.start_button = self._button("Start agent", "wb-agent-start", self.start, "primary")
        self.stop_button = self._button("Stop agent", "wb-agent-stop", self.stop, "danger")
        self.approve_button = self._button("Approve", "wb-agent-approve", self.approve,
                                           "success")
        self.reject_button = self._button("Reject", "wb-agent-reject", self.reject, "warning")
        self.note = w.Text(placeholder="review note", layout=w.Layout(width="260px"))
        self.note.add_class("wb-agent-note")
        self.status = w.HTML()
        self.status.add_class("wb-agent-status")
        self.view = w.HTML(timeline_html(self.timeline))
        self.view.add_class("wb-agent-timeline")
        self.stored = w.HTML()
        self.stored.add_class("wb-agent-stored")
        refresh = self._button("Refresh", "wb-agent-refresh", self.refresh_stored, "")
        self.widget = w.VBox([
            w.HBox([self.iterations, self.evaluations, self.auto_approve]),
            w.HBox([self.start_button, self.stop_button, self.note, self.approve_button,
                    self.reject_button]),
            self.status, self.view,
            w.HTML("<b>stored agent iterations</b> (every session of this kernel)"),
            refresh, self.stored], layout=w.Layout(width="100%"))
        self.widget.add_class("wb-tab-agent")
        self._unsubscribe = (self.control.events.subscribe(self._on_event)
                             if self.control is not None else (lambda: None))
        self._guard(self.refresh_stored)()
        self._show_status()

    def _button(self, label: str, cls: str, callback: Callable[[], None], style: str) -> Any:
        return guarded_button(label, cls, self._guard(callback), style)

    # --- state on screen
    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def _show_status(self, text: str = "") -> None:
        control = self.control
        if control is None:
            self.status.value = "this session cannot run the agent"
            self.start_button.disabled = True
            return
        waiting = control.waiting_for_review and not self.running
        self.start_button.disabled = self.running or waiting
        self.stop_button.disabled = not (self.running or waiting)
        self.approve_button.disabled = self.reject_button.disabled = not waiting
        if not text:
            outcome = control.last_outcome
            if self.running:
                text = f"running: {self.timeline.state or 'starting'}"
            elif outcome is not None:
                text = (f"waiting for your review of {outcome.pending_version_id}"
                        if waiting else f"{outcome.state.value}: {outcome.reason}")
            else:
                text = "idle"
        how = control.llm_description or "the LLM if WORKBENCH_MODEL and OPENAI_API_KEY " \
                                          "are set, else the offline planner and templater"
        budget = self.budget_line()
        trials = (f' · <span class="wb-agent-budget-line">{html.escape(budget)}</span>'
                  if budget else "")
        self.status.value = (f'<b class="wb-agent-state">{html.escape(text)}</b>{trials}'
                             f'<div class="wb-agent-llm">{html.escape(how)}</div>')

    def budget_line(self) -> str:
        """The tune step's progress in the one budget wording: while its search runs,
        ``"tune <version>: 12 more, 22 stored"`` counted from the trials measured so far;
        after it, the step's own end line (``"tuned <version> (budget): 0 more, 34 stored"``).
        "" before any tune step."""
        from dataclasses import replace

        tune = self._tune
        if tune is None:
            return ""
        if tune.reason:
            return str(tune.line)
        return str(replace(tune, stored_evaluations=tune.stored_evaluations
                           + self._step_trials).line)

    def _draw(self) -> None:
        with self._lock:
            drawn = timeline_html(self.timeline)
        self.view.value = drawn
        self._show_status()

    # --- events (the agent's thread)
    def _on_event(self, event: Any) -> None:
        from workbench.agent.events import TuneBudget
        from workbench.core.events import TrialFinished
        from workbench.core.records import Status

        if isinstance(event, TrialFinished):
            if event.result.status is Status.PRUNED:
                return  # pruned before the GPU: not part of the budget
            self._step_trials += 1
            now = self._clock()
            if now - self._status_at_s >= STATUS_INTERVAL_S:  # the status line only
                self._status_at_s = now
                self._guard(self._show_status)()
            return
        if isinstance(event, TuneBudget):
            if not event.reason:
                self._step_trials = 0
            self._tune = event
        with self._lock:
            changed = self.timeline.add(event)
        if changed:
            self._guard(self._draw)()

    # --- callbacks (the kernel's thread)
    def start(self) -> None:
        """Start a new agent session on the worker thread."""
        from workbench.agent.control import AgentRequest

        if self.control is None:
            raise WorkbenchError("this session cannot run the agent", key="agent", value=None)
        if self.running:
            raise WorkbenchError("the agent is already running; stop it first", key="agent",
                                 value="running")
        why_not = self._busy()
        if why_not:
            raise WorkbenchError(f"the agent cannot start: {why_not}", key="agent",
                                 value="busy")
        shape, dtype = self._problem()
        request = AgentRequest(shape=shape, dtype=dtype, iterations=int(self.iterations.value),
                               evaluations_per_tune=int(self.evaluations.value),
                               auto_approve=bool(self.auto_approve.value))
        with self._lock:
            self.timeline.clear()
        self._tune, self._step_trials = None, 0
        self._launch(lambda: self.control.run(request))

    def _launch(self, body: Callable[[], Any]) -> None:
        self._worker = threading.Thread(target=self._work, args=(body,),
                                        name="workbench-panel-agent", daemon=True)
        self._worker.start()
        self._draw()

    def _work(self, body: Callable[[], Any]) -> None:
        """The worker thread: the agent's loop; errors are shown, not raised."""
        try:
            outcome = body()
        except Exception as exc:
            self._guard(self._raise)(exc)
            outcome = None
        self._worker = None
        self._guard(self.refresh_stored)()
        self._draw()
        if outcome is not None:
            self._info(f"agent {outcome.state.value}: {outcome.reason}")

    @staticmethod
    def _raise(exc: BaseException) -> None:
        raise exc  # shown by the guard, like any callback's error

    def stop(self) -> None:
        if self.control is not None:
            self.control.stop()
        self._show_status("stopping after the trial in flight" if self.running else "")

    def approve(self) -> None:
        self._decide(self.control.approve)

    def reject(self) -> None:
        self._decide(self.control.reject)

    def _decide(self, decide: Callable[[str], str]) -> None:
        self._info(decide(str(self.note.value)))
        self._launch(self.control.resume)

    def refresh_stored(self) -> None:
        self.stored.value = iterations_html(self.backend.agent_iterations())

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the worker thread (tests); True once it has ended."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout_s)
        return not self.running

    def close(self) -> None:
        self._unsubscribe()
