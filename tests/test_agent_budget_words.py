"""The agent says its tune budget in the one wording, "N more, M stored"
(:mod:`workbench.core.budget_words`): in its progress lines (a TuneBudget event and the
PhaseChanged line when each tune step starts and ends), in each iteration's summary (the
IterationFinished result the timeline shows, the stored detail) and in the Agent tab's
timeline. Replay tier: the agent runs over the committed H100 recording with real nvcc."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from workbench.agent import AgentState, run_agent
from workbench.agent.events import TuneBudget
from workbench.core.events import EventBus, IterationFinished, PhaseChanged
from workbench.core.kernel_folder import load_kernel_folder
from workbench.store.sqlite import SQLiteStore
from workbench.ui.agent_timeline import AgentTimeline, timeline_html

ROOT = Path(__file__).resolve().parents[1]
WORDS = re.compile(r"(\d+) more, (\d+) stored")


def test_tune_budget_lines_in_the_one_wording() -> None:
    start = TuneBudget(2, "silu-3", budget_evaluations=34, stored_evaluations=18)
    assert start.words == "16 more, 18 stored"
    assert start.line == "tune silu-3: 16 more, 18 stored"
    end = TuneBudget(2, "silu-3", 34, 34, reason="budget")
    assert end.line == "tuned silu-3 (budget): 0 more, 34 stored"
    # a space with nothing left never promises a "more" it cannot measure
    assert TuneBudget(2, "silu-3", 34, 30, "exhausted").words == "space exhausted, 30 stored"


def test_timeline_shows_the_step_budget() -> None:
    timeline = AgentTimeline()
    assert timeline.add(TuneBudget(1, "v1", 4, 0))
    assert "4 more, 0 stored" in timeline_html(timeline)
    assert timeline.add(TuneBudget(1, "v1", 4, 4, "budget"))
    drawn = timeline_html(timeline)
    assert "0 more, 4 stored (budget)" in drawn and "4 more" not in drawn


@pytest.mark.replay
@pytest.mark.timeout(120)
def test_agent_progress_and_summary_say_n_more_m_stored(tmp_path: Path, compiler: Any) -> None:
    from workbench.engine.replay import ReplayRunner

    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    replay = ReplayRunner(folder)
    shape, dtype = replay.shapes_dtypes[0]
    bus = EventBus()
    seen: list[Any] = []
    bus.subscribe(seen.append)
    with SQLiteStore(tmp_path / "agent.sqlite") as store:
        outcome = run_agent(folder, runner=replay, store=store, compiler=compiler,
                            iterations=2, auto_approve=True, allow_unverified=True,
                            strategy="random", budget=4, shape=shape, dtype=dtype,
                            initial_template=folder.template, events=bus)
        assert outcome.state is AgentState.DONE
        stored = {r.iteration: dict(r.detail) for r in store.iterations(outcome.session_id)}
    budgets = [e for e in seen if isinstance(e, TuneBudget)]
    starts = [b for b in budgets if not b.reason]
    ends = [b for b in budgets if b.reason]
    assert len(starts) == len(ends) >= 1
    # the first step starts on an empty store; each later one counts what is stored
    assert starts[0].words == "4 more, 0 stored"
    for start, end in zip(starts, ends, strict=True):
        assert end.budget_evaluations == start.budget_evaluations
        assert start.stored_evaluations <= end.stored_evaluations <= end.budget_evaluations
    lines = [e.detail for e in seen if isinstance(e, PhaseChanged) and e.phase == "agent: tune"
             and WORDS.search(e.detail)]  # entering the state names only the version
    assert lines == [b.line for b in budgets]
    # the summary: each tuned iteration's result and stored detail end in the same words
    results = {e.iteration: e.detail for e in seen if isinstance(e, IterationFinished)}
    for end in ends:
        assert results[end.iteration].endswith(f"; {end.words}"), results[end.iteration]
        search = stored[end.iteration]["search"]
        assert search["budget"] == end.words
        more, total = map(int, WORDS.fullmatch(end.words).groups())  # type: ignore[union-attr]
        assert total == search["stored_before"] + search["measured_now"]
        assert more == max(search["budget_evaluations"] - total, 0)
