"""The panel's Agent tab on the real Workbench over a replay: start, review, stop, and the
iteration timeline filling as iterations are stored; the LLM case uses the real openai
client against a real loopback server (workbench.testing.openai_server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.api import Workbench
from workbench.core.events import TrialFinished
from workbench.testing.openai_server import OpenAITranscriptServer, TranscriptStep
from workbench.ui.panel import WorkbenchPanel

pytest.importorskip("ipywidgets")
pytestmark = [pytest.mark.replay, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def panel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkbenchPanel]:
    for name in ("WORKBENCH_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    wb = Workbench(ROOT / "sample_kernels" / "silu_and_mul", store=tmp_path / "s.sqlite")
    made = WorkbenchPanel(wb)
    yield made
    made.agent.stop()
    made.agent.join(30)
    made.close()


def drawn(panel: WorkbenchPanel) -> list[str]:
    """Every timeline the tab drew, in order."""
    seen: list[str] = []
    panel.agent.view.observe(lambda change: seen.append(change["new"]), names="value")
    return seen


def test_offline_agent_waits_for_review_then_fills_the_timeline(panel: WorkbenchPanel) -> None:
    tab, wb = panel.agent, panel.backend
    frames = drawn(panel)
    search_rows = len(panel.table)
    trials: list[Any] = []
    wb.agent_control().events.subscribe(
        lambda e: trials.append(e) if isinstance(e, TrialFinished) else None)
    tab.iterations.value, tab.evaluations.value = 2, 4
    tab.start_button.click()
    assert tab.join(60)
    assert "waiting for your review of silu_and_mul-" in tab.status.value, tab.status.value
    assert "no LLM endpoint configured" in tab.status.value
    assert "waiting for your review" in tab.view.value
    assert not tab.approve_button.disabled and tab.start_button.disabled
    tab.note.value = "looks right"
    tab.approve_button.click()
    assert tab.join(60)
    assert "done: iteration budget spent (2 iterations)" in tab.status.value, tab.status.value
    assert "approved by" in tab.view.value and "(offline)" in tab.view.value
    # live: a frame showed iteration 1's best before the agent had finished
    early = [f for f in frames if "µs" in f and "wb-agent-finished" not in f]
    assert early, frames[-1]
    # the rows are the stored iterations' numbers; the search charts got none of its trials
    outcome = wb.agent_control().last_outcome
    stored = wb.store.iterations(outcome.session_id)
    assert {r.iteration for r in stored} == {1, 2}
    assert f"{stored[-1].best_us:.3f} µs" in tab.view.value
    # the one budget wording: the last tune step's end line, and each step's in its row
    assert len(trials) >= 8
    last = dict(stored[-1].detail)["search"]
    assert f"({last['reason']}): {last['budget']}" in tab.status.value, tab.status.value
    assert "trials measured" not in tab.status.value
    for row in stored:
        if "search" in row.detail:
            assert dict(row.detail)["search"]["budget"] in tab.view.value
    assert len(panel.table) == search_rows
    assert "silu_and_mul-" in tab.stored.value  # the stored view was re-read


def test_stop_ends_the_agent_after_the_trial_in_flight(panel: WorkbenchPanel) -> None:
    tab = panel.agent
    control = panel.backend.agent_control()
    stopped: list[int] = []

    def stop_on_first_trial(event: Any) -> None:
        if isinstance(event, TrialFinished) and not stopped:
            stopped.append(event.index)
            tab.stop_button.click()  # on the agent's thread, as a click would land

    control.events.subscribe(stop_on_first_trial)
    tab.iterations.value, tab.evaluations.value, tab.auto_approve.value = 5, 500, True
    tab.start_button.click()
    assert tab.join(60)
    assert stopped
    assert control.last_outcome.reason == "stopped", control.last_outcome
    assert "done: stopped" in tab.status.value
    assert control.last_outcome.iterations == 1
    assert not tab.start_button.disabled and tab.stop_button.disabled


def test_agent_asks_the_llm_configured_in_the_environment(
        panel: WorkbenchPanel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Iteration 1 tunes the current template; iteration 2's plan is the LLM's (stop)."""
    tab = panel.agent
    plan = {"diagnosis": "memory bound at the copy roofline", "hypotheses": [],
            "next_action": "stop", "configs_to_enqueue": []}
    with OpenAITranscriptServer([TranscriptStep.from_dict({"content_json": plan})]) as server:
        monkeypatch.setenv("WORKBENCH_MODEL", "gpt-test")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        tab.iterations.value, tab.evaluations.value, tab.auto_approve.value = 3, 4, True
        tab.start_button.click()
        assert tab.join(60)
        assert len(server.requests) == 1
        url = server.base_url
    assert f"LLM gpt-test at {url}" in tab.status.value, tab.status.value
    assert "the plan says stop: memory bound" in tab.status.value
    assert "stop: memory bound at the copy roofline (llm)" in tab.view.value
    assert "sk-test-key" not in tab.view.value + tab.status.value + tab.stored.value


def test_unreachable_endpoint_is_named_in_the_tab(panel: WorkbenchPanel,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tab = panel.agent
    with OpenAITranscriptServer([TranscriptStep(drop=True)] * 4) as server:
        monkeypatch.setenv("WORKBENCH_MODEL", "gpt-test")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("WORKBENCH_LLM_TIMEOUT", "0.5")
        tab.iterations.value, tab.evaluations.value, tab.auto_approve.value = 2, 4, True
        tab.start_button.click()
        assert tab.join(60)
        url = server.base_url
    assert f"failed: the LLM endpoint {url}" in tab.status.value, tab.status.value
    assert "could not be reached" in tab.status.value
    assert "plan step of iteration 2" in tab.status.value


def test_agent_refuses_to_start_while_a_search_runs(panel: WorkbenchPanel) -> None:
    import threading

    gate = threading.Event()
    panel._worker = threading.Thread(target=gate.wait, daemon=True)  # a search in flight
    panel._worker.start()
    try:
        panel.agent.start_button.click()
        assert "the agent cannot start: a search is running" in panel.message.value
        assert not panel.agent.running
    finally:
        gate.set()


class _Control:
    """The parts of an AgentControl the tab reads, with a real event bus."""

    def __init__(self) -> None:
        from workbench.core.events import EventBus

        self.events = EventBus()
        self.waiting_for_review = False
        self.last_outcome = None
        self.llm_description = "offline"


class _Backend:
    def __init__(self) -> None:
        self.control = _Control()

    def agent_control(self) -> _Control:
        return self.control

    def agent_iterations(self) -> list[Any]:
        return []


def test_the_status_line_counts_the_tune_step_live_in_the_one_wording() -> None:
    """Between agent events the status line follows the measured trials ("N more, M
    stored"), redrawn at most every STATUS_INTERVAL_S of the injected clock; pruned trials
    are not counted."""
    from workbench.agent.events import TuneBudget
    from workbench.core.records import Config, Status, TrialResult
    from workbench.ui.agent_tab import STATUS_INTERVAL_S, AgentTab

    now = [100.0]
    backend = _Backend()
    tab = AgentTab(backend, problem=lambda: ("small", "bf16"), busy=lambda: "",
                   guard=lambda f: f, info=lambda _t: None, clock=lambda: now[0])
    bus = backend.control.events

    def trial(status: Status) -> TrialFinished:
        return TrialFinished(TrialResult(config=Config(BLOCK=64), shape="small", dtype="bf16",
                                         status=status), 0)

    bus.publish(TuneBudget(1, "silu-1", budget_evaluations=20, stored_evaluations=4))
    assert "tune silu-1: 16 more, 4 stored" in tab.status.value
    bus.publish(trial(Status.OK))
    assert "15 more, 5 stored" in tab.status.value
    bus.publish(trial(Status.OK))  # within the interval: counted, not drawn yet
    bus.publish(trial(Status.PRUNED))
    assert "15 more, 5 stored" in tab.status.value
    now[0] += STATUS_INTERVAL_S
    bus.publish(trial(Status.COMPILE_ERROR))  # a failed measurement counts toward the budget
    assert "13 more, 7 stored" in tab.status.value
    bus.publish(TuneBudget(1, "silu-1", 20, 20, reason="budget"))
    assert "tuned silu-1 (budget): 0 more, 20 stored" in tab.status.value
    tab.close()
