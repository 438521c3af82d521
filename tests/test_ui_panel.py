"""Panel logic without a browser: widgets get a dummy comm, so clicks and thread updates work.

Most tests use a small fake backend whose ``tune`` runs on the panel's worker thread like the
real Workbench (its trial timings are test inputs, not measurements); the replay tests drive
the real :class:`~workbench.api.Workbench` over a committed H100 recording.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from workbench.core.errors import CompileError, WorkbenchError
from workbench.core.events import ErrorEvent, EventBus, SearchFinished, TrialFinished
from workbench.core.params import parameter_from_dict
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.panel import WorkbenchPanel, config_defines, describe_error
from workbench.ui.params_editor import SpaceSummary
from workbench.ui.state_view import from_wire

pytest.importorskip("ipywidgets")
pytest.importorskip("plotly")


def _trial(i: int) -> TrialResult:
    block = 32 << (i % 6)
    if i % 7 == 3:
        return TrialResult(config=Config(BLOCK=block, VEC=2), shape="s", dtype="bf16",
                           status=Status.COMPILE_ERROR, reason="ptxas error",
                           log_excerpt="template.cu(12): error: identifier VECX is undefined")
    us = 5.0 + (i % 6) * 0.5 + 0.01 * i
    t = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=5,
               rse_median_pct=1.0, l2_flushed=True)
    return TrialResult(config=Config(BLOCK=block, VEC=4), shape="s", dtype="bf16",
                       status=Status.OK, timing=t)


@dataclass(frozen=True)
class FakeReport:
    """What the panel reads from a tune's report."""

    reason: str
    results: tuple[TrialResult, ...]
    baseline_us: float | None = 10.0

    def summary(self) -> str:
        return f"fake report: {len(self.results)} stored trials"


class FakeBackend:
    """Runs ``tune`` synchronously on the caller's thread (the panel's worker) like the real
    Workbench; with ``gated=True`` each trial waits for a permit the test hands out, so the
    tests control progress with events instead of sleeping."""

    kernel_name = "fake_kernel"
    template_version = "fake_kernel-000000000000"

    def __init__(self, n_trials: int = 40, gated: bool = False) -> None:
        self.events = EventBus()
        self.n_trials = n_trials
        self.gated = gated
        self._cond = threading.Condition()
        self._permits = 0
        self._stopped = False
        self.paused = False
        self.stored: list[TrialResult] = []  # what the fake store holds, across launches
        self.set_params_calls: list[list[Any]] = []
        self.reviews: list[tuple[str, str]] = []
        self.runner_description = "replay of FAKE recording from 2026-01-01"
        self.shape_names = ["s", "m"]
        self.dtypes = ["bf16"]
        self.strategies = ["random", "grid"]
        self.params = [parameter_from_dict("BLOCK", {"kind": "pow2", "min": 32, "max": 1024}),
                       parameter_from_dict("VEC", {"kind": "choice", "values": [2, 4]})]
        self.baseline_source = "int a;\n"
        self.template_source = "int a;\nint b;\n"
        self.fail_start = False
        self.stored_pick: Any = None  # what the fake store holds as the pick (a PickRecord)

    replay_problem = ""

    def summarize_space(self, params: Sequence[Any], shape: str, dtype: str) -> SpaceSummary:
        size = 1
        for p in params:
            size *= p.size
        return SpaceSummary(size, size, {}, {}, None)

    def set_params(self, params: Sequence[Any]) -> None:
        self.set_params_calls.append(list(params))

    def check_compile(self, before: Sequence[Any], after: Sequence[Any], shape: str,
                      dtype: str) -> Any:
        from workbench.ui.edit_check import CompileCheck

        return CompileCheck(corners=(), failures=())

    def baseline_us(self, shape: str, dtype: str) -> float | None:
        return 10.0

    def results(self, shape: str, dtype: str) -> list[TrialResult]:
        return list(self.stored)

    def pick(self, shape: str, dtype: str) -> Any:
        return self.stored_pick

    def allow(self, n: int) -> None:
        """Let ``n`` more trials through (gated mode)."""
        with self._cond:
            self._permits += n
            self._cond.notify_all()

    def _next_allowed(self) -> bool:
        with self._cond:
            self._cond.wait_for(lambda: self._stopped or (not self.paused and (
                not self.gated or self._permits > 0)))
            if self._stopped:
                return False
            self._permits -= 1
            return True

    def tune(self, shape: str, dtype: str, strategy: str, budget: int) -> FakeReport:
        if self.fail_start:
            raise CompileError("nvcc failed", log_excerpt="error: expected ';'", kind="syntax")
        self._stopped = False
        while len(self.stored) < min(budget, self.n_trials):  # the budget counts stored trials
            if not self._next_allowed():
                break
            trial = _trial(len(self.stored))
            self.stored.append(trial)
            self.events.publish(TrialFinished(result=trial, index=len(self.stored) - 1))
        reason = "stopped" if self._stopped else "budget"
        self.events.publish(SearchFinished(reason=reason, evaluated=len(self.stored)))
        return FakeReport(reason, tuple(self.stored))

    def pause_search(self) -> None:
        with self._cond:
            self.paused = True

    def resume_search(self) -> None:
        with self._cond:
            self.paused = False
            self._cond.notify_all()

    def stop_search(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def propose_template(self) -> str:
        self.template_source = "int a;\nint c;\n"
        return "proposed offline"

    def review(self, decision: str, note: str) -> str:
        if decision == "rejected" and not note:
            raise WorkbenchError("a rejection needs a note", key="note", value=note)
        self.reviews.append((decision, note))
        return decision

    def review_status(self) -> str:
        return self.reviews[-1][0] if self.reviews else "not reviewed"

    def agent_iterations(self) -> Sequence[Any]:
        return []

    def export(self, what: str, path: str, shape: str, dtype: str) -> str:
        return f"{what}:{len(self.results(shape, dtype))}"


def _wait(pred: Any, timeout_s: float = 10.0) -> None:
    """Poll a condition another thread makes true (never a fixed sleep)."""
    done = threading.Event()
    end = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        done.wait(0.01)


@pytest.fixture
def panel_and_backend() -> Any:
    backend = FakeBackend()
    panel = WorkbenchPanel(backend)  # type: ignore[arg-type]
    yield panel, backend
    panel.close()


@pytest.mark.timeout(30)
def test_launch_fills_charts_progress_and_top_table(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    backend.gated = True  # held until the test has seen "running" (an ungated fake can
    panel.budget.value = 30  # finish its 30 trials before the assertion reads the header)
    panel.launch_button.click()
    assert "running" in panel.header.value
    backend.allow(30)
    _wait(lambda: "finished (budget)" in panel.header.value)
    _wait(lambda: panel.run_view.field("done") == 30)
    ok_trace = from_wire(panel.run_view.chart["traces"])[str(panel.layout.ok_trace["BLOCK"])]
    assert len(ok_trace["x"]) == sum(1 for i in range(30) if i % 7 != 3)
    assert "wb-trials-table" in panel.run_view.field("table_html")
    assert "#define BLOCK 32" in panel.copy_button.text  # the fastest fake trial
    assert "identifier VECX is undefined" in panel.run_view.field("failures_html")
    assert panel.launch_button.disabled is False


@pytest.mark.timeout(30)
def test_pushes_are_throttled(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    backend.n_trials = 400
    panel.budget.value = 400
    start = time.monotonic()
    panel.launch_button.click()
    assert panel.join(20)
    elapsed = time.monotonic() - start
    panel.pusher.flush()
    assert panel.run_view.field("done") == 400
    # <= 4 per second, plus the final flush and the launch notify.
    assert panel.pusher.push_count <= 4 * elapsed + 3


def _launch_gated(panel: WorkbenchPanel, backend: FakeBackend, trials: int) -> None:
    """Launch a 1000-trial search and let ``trials`` of them land."""
    panel.budget.value = 1000
    panel.launch_button.click()
    backend.allow(trials)
    _wait(lambda: len(panel.table) == trials)


@pytest.mark.timeout(30)
def test_pause_resume_and_stop() -> None:
    backend = FakeBackend(n_trials=1000, gated=True)
    panel = WorkbenchPanel(backend)  # type: ignore[arg-type]
    try:
        _launch_gated(panel, backend, 5)
        panel.pause_button.click()
        assert panel.pause_button.description == "Resume" and backend.paused
        backend.allow(5)  # permits while paused are held back
        panel.pause_button.click()
        assert not backend.paused
        _wait(lambda: len(panel.table) == 10)
        panel.stop_button.click()
        assert panel.join(10)
        assert "finished (stopped)" in panel.header.value
        assert len(panel.table) == 10 and len(backend.stored) == 10
    finally:
        panel.close()


def _progress(panel: WorkbenchPanel) -> str:
    return f"{panel.run_view.field('done')} / {panel.run_view.field('budget')}"


def _launch_and_wait(panel: WorkbenchPanel, budget: int) -> None:
    panel.budget.value = budget
    panel.launch_button.click()
    assert panel.join(10)
    panel.pusher.flush()


@pytest.mark.timeout(30)
def test_relaunch_shows_every_stored_trial(panel_and_backend: Any) -> None:
    panel = panel_and_backend[0]
    _launch_and_wait(panel, 12)
    _launch_and_wait(panel, 12)  # the same budget again: nothing new, everything shown
    assert len(panel.table) == 12 and _progress(panel) == "12 / 12"
    assert "wb-trials-table" in panel.run_view.field("table_html")
    _launch_and_wait(panel, 20)  # a larger budget: the 12 stored plus 8 new
    assert len(panel.table) == 20 and _progress(panel) == "20 / 20"


def test_errors_show_in_place_and_panel_survives(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    backend.fail_start = True
    panel.launch_button.click()
    assert panel.join(10)
    assert "CompileError" in panel.message.value and "expected &#x27;;&#x27;" in panel.message.value
    assert "error" in panel.header.value and panel.launch_button.disabled is False
    panel.reject_button.click()  # no note: the backend refuses
    assert "needs a note" in panel.message.value
    backend.events.publish(ErrorEvent(message="worker died", detail="Traceback ..."))
    assert "worker died" in panel.message.value and "error" in panel.header.value


def test_range_edit_updates_space_and_backend(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    assert "<b>12</b>" in panel.editor.summary.value  # 6 pow2 values x 2 choices
    panel.editor.set_text("BLOCK", "max", "128")
    assert "<b>6</b>" in panel.editor.summary.value
    assert [p.size for p in backend.set_params_calls[-1]] == [3, 2]
    calls = len(backend.set_params_calls)
    panel.editor.set_text("BLOCK", "max", "100")
    assert "wb-space-error" in panel.editor.summary.value and "power of two" in panel.editor.summary.value
    assert len(backend.set_params_calls) == calls  # invalid ranges never reach the backend


def test_propose_approve_and_export(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    panel.propose_button.click()
    assert '<span class="n">c</span>' in panel.diff_view.value and "proposed offline" in panel.message.value
    panel.review_note.value = "looks right"
    panel.approve_button.click()
    assert backend.reviews == [("approved", "looks right")]
    assert "approved" in panel.review_status.value


def test_helpers() -> None:
    r = _trial(0)
    assert config_defines(r).splitlines()[1:] == ["#define BLOCK 32", "#define VEC 4"]
    text = describe_error(CompileError("nvcc failed", log_excerpt="line 3: bad"))
    assert "line 3: bad" in text and "CompileError" in text


@pytest.mark.timeout(30)
def test_a_click_is_answered_at_once_while_the_browser_is_behind() -> None:
    """The browser acknowledged a chart once, then stopped drawing (a loaded machine): the
    pusher waits for it, but Pause and Stop are answered at once, each by one small message
    (status and count, no chart) sent before the click handler returns."""
    backend = FakeBackend(n_trials=1000, gated=True)
    panel = WorkbenchPanel(backend)  # type: ignore[arg-type]
    view = panel.run_view
    try:
        _launch_gated(panel, backend, 5)
        _wait(lambda: view.field("done") == 5)
        view._on_message(view, {"ack": 1, "draw_ms": 1.0}, [])  # a browser exists; behind
        backend.allow(5)
        _wait(lambda: len(panel.table) == 10)
        sent: list[dict[str, Any]] = []
        view._send = lambda msg, buffers=None: sent.append(msg["state"])
        panel.pause_button.click()
        assert sent and sorted(sent[0]) == ["state"]
        assert sent[0]["state"]["status"] == "paused" and sent[0]["state"]["done"] == 10
        sent.clear()
        panel.stop_button.click()
        assert sent and sent[0]["state"]["status"] == "stopping"
        assert panel.join(10)
    finally:
        panel.close()


@pytest.mark.timeout(30)
def test_stop_after_the_search_ended_leaves_the_end_on_screen() -> None:
    """Stop answered after the search finished (a race on a loaded machine) must not turn
    "finished (stopped)" back into "stopping"."""

    class EndsAtStop(FakeBackend):
        panel: WorkbenchPanel

        def stop_search(self) -> None:
            super().stop_search()
            assert self.panel.join(10)  # the end is on screen before Stop's answer

    backend = EndsAtStop(n_trials=1000, gated=True)
    panel = WorkbenchPanel(backend)  # type: ignore[arg-type]
    backend.panel = panel
    try:
        _launch_gated(panel, backend, 3)
        panel.stop_button.click()
        assert "finished (stopped)" in panel.header.value
        assert panel.run_view.field("status") == "finished (stopped)"
    finally:
        panel.close()


def test_table_controls_filter_and_sort_from_the_browser(panel_and_backend: Any) -> None:
    panel = panel_and_backend[0]
    _launch_and_wait(panel, 20)
    panel.run_view._on_message(panel.run_view, {"query": {
        "filter": "BLOCK == 64", "sort_by": "median_us", "descending": True, "status": "ok",
        "limit": 50, "unknown": 1}}, [])
    table = panel.run_view.field("table_html")
    assert panel.table_query().filter == "BLOCK == 64" and panel.table_query().limit == 50
    assert "matching" in table and ">1024<" not in table
    panel.run_view._on_message(panel.run_view, {"query": {"filter": "BLOCK ==="}}, [])
    assert "wb-trials-error" in panel.run_view.field("table_html")


def test_parallel_coordinates_are_drawn_apart(panel_and_backend: Any) -> None:
    """The WebGL parallel coordinates are their own plot (drawn on their own task, less
    often); their updates keep the index the combined figure gives them."""
    panel = panel_and_backend[0]
    view = panel.run_view
    assert [t["type"] for t in view.parcoords["data"]] == ["parcoords"]
    assert view.parcoords["trace"] == panel.layout.parcoords_trace
    assert "parcoords" not in {t["type"] for t in view.figure["data"]}
    assert len(view.figure["data"]) == panel.layout.parcoords_trace
