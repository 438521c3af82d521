"""Panel logic without a browser: widgets get a dummy comm, so clicks and thread updates work.

The backend is a small fake that publishes events from a thread like the orchestrator does;
its trial timings are test inputs, not measurements.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from workbench.core.errors import CompileError, WorkbenchError
from workbench.core.events import ErrorEvent, EventBus, SearchFinished, TrialFinished
from workbench.core.params import parameter_from_dict
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.panel import WorkbenchPanel, config_defines, describe_error, top_n_html
from workbench.ui.params_editor import SpaceSummary

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


class FakeBackend:
    kernel_name = "fake_kernel"

    def __init__(self, n_trials: int = 40, delay_s: float = 0.005) -> None:
        self.events = EventBus()
        self.n_trials = n_trials
        self.delay_s = delay_s
        self._stop = threading.Event()
        self._resume = threading.Event()
        self._resume.set()
        self.thread: threading.Thread | None = None
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

    def summarize_space(self, params: Sequence[Any], shape: str, dtype: str) -> SpaceSummary:
        size = 1
        for p in params:
            size *= p.size
        return SpaceSummary(size, size, {}, {}, None)

    def set_params(self, params: Sequence[Any]) -> None:
        self.set_params_calls.append(list(params))

    def baseline_us(self, shape: str, dtype: str) -> float | None:
        return 10.0

    def start_search(self, shape: str, dtype: str, strategy: str, budget: int) -> None:
        if self.fail_start:
            raise CompileError("nvcc failed", log_excerpt="error: expected ';'", kind="syntax")

        def loop() -> None:
            n = 0
            for i in range(min(budget, self.n_trials)):
                self._resume.wait()
                if self._stop.is_set():
                    break
                self.events.publish(TrialFinished(result=_trial(i), index=i))
                n += 1
                time.sleep(self.delay_s)
            self.events.publish(SearchFinished(reason="stopped" if self._stop.is_set() else "budget",
                                               evaluated=n))

        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def pause_search(self) -> None:
        self._resume.clear()

    def resume_search(self) -> None:
        self._resume.set()

    def stop_search(self) -> None:
        self._stop.set()
        self._resume.set()

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

    def export(self, what: str, path: str, results: Sequence[TrialResult]) -> str:
        return f"{what}:{len(results)}"


def _wait(pred: Any, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


@pytest.fixture
def panel_and_backend() -> Any:
    backend = FakeBackend()
    panel = WorkbenchPanel(backend)  # type: ignore[arg-type]
    yield panel, backend
    panel.close()


@pytest.mark.timeout(30)
def test_launch_fills_charts_progress_and_top_table(panel_and_backend: Any) -> None:
    panel, _backend = panel_and_backend
    panel.budget.value = 30
    panel.launch_button.click()
    assert "running" in panel.header.value
    _wait(lambda: "finished (budget)" in panel.header.value)
    _wait(lambda: panel.progress.value == 30)
    ok_trace = panel.figure.data[panel.layout.ok_trace["BLOCK"]]
    assert len(ok_trace.x) == sum(1 for i in range(30) if i % 7 != 3)
    assert "wb-topn-table" in panel.top_table.value
    assert "#define BLOCK 32" in panel.copy_button.text  # the fastest fake trial
    assert "identifier VECX is undefined" in panel.failures.value
    assert panel.launch_button.disabled is False


@pytest.mark.timeout(30)
def test_pushes_are_throttled(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    backend.n_trials, backend.delay_s = 400, 0.002
    panel.budget.value = 400
    start = time.monotonic()
    panel.launch_button.click()
    _wait(lambda: "finished" in panel.header.value)
    elapsed = time.monotonic() - start
    time.sleep(0.3)
    assert panel.progress.value == 400
    # <= 4 per second, plus the final flush and the launch notify.
    assert panel.pusher.push_count <= 4 * elapsed + 3


@pytest.mark.timeout(30)
def test_pause_resume_and_stop(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    backend.n_trials, backend.delay_s = 1000, 0.01
    panel.budget.value = 1000
    panel.launch_button.click()
    _wait(lambda: len(panel.table) > 5)
    panel.pause_button.click()
    assert panel.pause_button.description == "Resume"
    time.sleep(0.1)
    n = len(panel.table)
    time.sleep(0.2)
    assert len(panel.table) == n
    panel.pause_button.click()
    _wait(lambda: len(panel.table) > n)
    panel.stop_button.click()
    _wait(lambda: "finished (stopped)" in panel.header.value)
    assert len(panel.table) < 1000


def test_errors_show_in_place_and_panel_survives(panel_and_backend: Any) -> None:
    panel, backend = panel_and_backend
    backend.fail_start = True
    panel.launch_button.click()
    assert "CompileError" in panel.message.value and "expected &#x27;;&#x27;" in panel.message.value
    assert "idle" in panel.header.value and panel.launch_button.disabled is False
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
    html = top_n_html([_trial(i) for i in range(20)], ["BLOCK", "VEC"], n=3, baseline_us=10.0)
    assert html.count("<tr") == 4
    text = describe_error(CompileError("nvcc failed", log_excerpt="line 3: bad"))
    assert "line 3: bad" in text and "CompileError" in text
