"""The agent loop end to end on CPU: real nvcc compiles and validation, the real openai
client over a real loopback socket (agent transcripts), a real SQLite store. Times come from
ReplayRunner where a recording covers the configs, otherwise from the tests-only
SyntheticRunner (every such result is marked source="synthetic")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.agent import (
    AgentMachine,
    AgentState,
    ReviewRequest,
    parameter_table,
    propose_only,
    run_agent,
    speedup_per_iteration,
)
from workbench.agent.events import AgentFinished, PlanMade, ReviewRequested, TemplateProposed
from workbench.agent.records import AgentConfig
from workbench.core.events import EventBus, IterationFinished, TrialFinished
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.core.records import Config, Status
from workbench.engine.compiler import Compiler
from workbench.engine.ncu import parse_ncu_csv, profile_config
from workbench.search.budget import Budget
from workbench.store.approval import approval_key as template_sha256
from workbench.store.approval import approval_text as template_text
from workbench.store.sqlite import SQLiteStore
from workbench.testing.synthetic_runner import SyntheticRunner

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = Path(__file__).parent / "transcripts"
SHAPE, DTYPE, EVALS = "small", "bf16", 3


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")



@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "agent.sqlite") as s:
        yield s


@pytest.fixture
def runner(folder: KernelFolder, compiler: Compiler) -> SyntheticRunner:
    return SyntheticRunner(folder, folder.template, compiler=compiler)




def collect(bus: EventBus) -> list[Any]:
    seen: list[Any] = []
    bus.subscribe(seen.append)
    return seen


def run(folder: KernelFolder, runner: Any, store: SQLiteStore, compiler: Compiler,
        **kwargs: Any) -> Any:
    # replay and synthetic runners verify nothing on a GPU: auto-approval of their
    # unverified templates needs the explicit allow_unverified
    options: dict[str, Any] = {"iterations": 2, "llm_calls": 10, "strategy": "random",
                               "budget": Budget(max_evaluations=EVALS), "shape": SHAPE,
                               "dtype": DTYPE, "allow_unverified": True}
    options.update(kwargs)
    return run_agent(folder, runner=runner, store=store, compiler=compiler, **options)


def assert_speedups_match_store(store: SQLiteStore, session_id: str) -> list[Any]:
    """The query agrees with an independent reading of the stored trials and iterations."""
    points = speedup_per_iteration(store, session_id)
    rows = store.iterations(session_id)
    best_so_far = float("inf")
    for point in points:
        tests = [r.detail["test"] for r in rows if r.iteration <= point.iteration
                 and r.detail.get("test", {}).get("status") == "ok"]
        best_so_far = min(t["best_us"] for t in tests)
        assert point.best_us == pytest.approx(best_so_far)
        assert point.baseline_us is not None
        assert point.speedup == pytest.approx(point.baseline_us / point.best_us)
    ok_trials = [t.result for t in store.trials() if t.session_id == session_id
                 and t.result.status is Status.OK]
    if points:  # the re-tested best is the fastest stored trial (synthetic: deterministic)
        assert points[-1].best_us == pytest.approx(min(r.median_us or 0 for r in ok_trials))
    return points


# -- the full loop -----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(60)
def test_two_iterations_with_llm_and_approve_callback(folder: KernelFolder, runner: Any,
                                                      store: SQLiteStore, compiler: Compiler,
                                                      llm: Any) -> None:
    server, client = llm("agent_two_iterations")
    bus = EventBus()
    events = collect(bus)
    requests: list[ReviewRequest] = []

    def approve(request: ReviewRequest) -> bool:
        requests.append(request)
        return True

    outcome = run(folder, runner, store, compiler, client=client, approve=approve, events=bus)
    assert outcome.state is AgentState.DONE and "iteration budget" in outcome.reason
    assert outcome.iterations == 2 and outcome.llm_calls == 3 and server.remaining_steps == 0
    # two versions: the second's parent is the first, each with a unified diff
    first, second = store.template_versions(folder.name)
    assert (first.origin, second.origin) == ("llm", "llm")
    assert first.parent_id is None and second.parent_id == first.id
    assert first.diff_vs_parent.startswith("--- baseline.cu")
    assert "+#ifndef BLOCK_THREADS" in first.diff_vs_parent
    assert '-   "min": 32' in second.diff_vs_parent and '+   "min": 128' in second.diff_vs_parent
    # reviews: proposed by the agent, approved by the callback's reviewer, of the exact text
    for version, request in zip((first, second), requests, strict=True):
        reviews = store.reviews(version.id)
        assert [r.decision for r in reviews] == ["proposed", "approved"]
        assert reviews[1].reviewer == "user"
        assert {r.approved_text_sha256 for r in reviews} == {request.template_sha256}
        assert request.template_sha256 == template_sha256(request.template)
        assert template_text(request.template).startswith(version.source_text)
    # trials: EVALS per iteration, all synthetic, keyed by one template text (same source)
    trials = [t for t in store.trials() if t.session_id == outcome.session_id]
    measured = [t for t in trials if t.result.status is not Status.PRUNED]
    assert len(measured) == 2 * EVALS
    assert {t.result.source for t in measured} == {"synthetic"}
    # the plan's valid config was measured in iteration 2; the invalid one was dropped
    rows = store.iterations(outcome.session_id)
    assert [(r.iteration, r.state) for r in rows] == [(1, "test"), (2, "test")]
    search2 = rows[1].detail["search"]
    assert search2["enqueued"] == [{"BLOCK_THREADS": 256, "VEC_BYTES": 16}]
    assert search2["dropped_suggestions"] == [{"BLOCK_THREADS": 256, "VEC_BYTES": 3}]
    assert Config(BLOCK_THREADS=256, VEC_BYTES=16) in {t.result.config for t in measured}
    assert rows[1].detail["plan"]["next_action"] == "refine_template"
    # the plan prompt carried the hardware-aware context and the history
    plan_prompt = server.requests[1].body["messages"][1]["content"]
    assert "NVIDIA H100" in plan_prompt and "## History of this session" in plan_prompt
    assert "bytes moved (roofline)" in plan_prompt and "occupancy:" in plan_prompt
    # every LLM call stored, scrubbed
    calls = store.llm_calls(outcome.session_id)
    assert [c.request["purpose"] for c in calls] == ["template", "plan", "template"]
    assert all("sk-test-key" not in str(c.request) for c in calls)
    # speedup per iteration is a store query and agrees with the stored trials
    points = assert_speedups_match_store(store, outcome.session_id)
    assert [p.iteration for p in points] == [1, 2]
    assert points[1].best_us <= points[0].best_us
    assert outcome.best_us == pytest.approx(points[-1].best_us)
    kinds = {type(e).__name__ for e in events}
    assert {"IterationStarted", "TemplateProposed", "ReviewRecorded", "PlanMade",
            "BestRetested", "TrialFinished", "AgentFinished"} <= kinds
    assert sum(isinstance(e, IterationFinished) for e in events) == 2


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_llm_call_budget_spent_mid_run(folder: KernelFolder, runner: Any, store: SQLiteStore,
                                       compiler: Compiler, llm: Any) -> None:
    server, client = llm("agent_llm_budget")
    outcome = run(folder, runner, store, compiler, client=client, iterations=3, llm_calls=2,
                  auto_approve=True, allow_unverified=True)
    assert outcome.state is AgentState.DONE
    assert "LLM-call budget spent (2 of 2 calls) before generate" in outcome.reason
    assert len(server.requests) == 2  # the third request was never sent
    assert outcome.llm_calls == 2 and len(store.llm_calls(outcome.session_id)) == 2
    [version] = store.template_versions(folder.name)
    assert [r.reviewer for r in store.reviews(version.id)] == ["agent", "auto-approve"]
    rows = store.iterations(outcome.session_id)
    assert [(r.iteration, r.state) for r in rows] == [(1, "test"), (2, "generate:stopped")]
    assert rows[1].detail["plan"]["next_action"] == "refine_template"  # the plan is kept
    # the panel's Agent tab reads the same detail: the version's diff and its approval
    from workbench.ui.agent_tab import iterations_html

    html = iterations_html(rows)
    assert "approved by auto-approve" in html and version.id in html
    assert html.count("@@") >= 1  # the unified diff of the proposed version
    assert outcome.best is not None and outcome.speedup is not None
    assert len(assert_speedups_match_store(store, outcome.session_id)) == 2


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_endpoint_that_keeps_failing_ends_failed_and_keeps_everything(
        folder: KernelFolder, runner: Any, store: SQLiteStore, compiler: Compiler,
        llm: Any) -> None:
    server, client = llm("agent_endpoint_down", max_attempts=2)
    bus = EventBus()
    events = collect(bus)
    outcome = run(folder, runner, store, compiler, client=client, auto_approve=True, allow_unverified=True, events=bus)
    assert outcome.state is AgentState.FAILED
    assert "the LLM endpoint" in outcome.reason and "HTTP 500" in outcome.error
    assert "plan step of iteration 2" in outcome.reason
    assert server.remaining_steps == 0
    assert len(store.template_versions(folder.name)) == 1
    assert sum(t.result.status is not Status.PRUNED for t in store.trials()) == EVALS
    rows = store.iterations(outcome.session_id)
    assert [(r.iteration, r.state) for r in rows] == [(1, "test"), (2, "failed")]
    assert "HTTP 500" in rows[1].detail["error"]
    calls = store.llm_calls(outcome.session_id)
    assert [c.request["purpose"] for c in calls] == ["template", "plan"]
    assert "LLMEndpointError" in calls[1].reply_text
    assert outcome.best is not None  # iteration 1's best survives the failure
    finished = [e for e in events if isinstance(e, AgentFinished)]
    assert [f.state for f in finished] == ["failed"]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_proposal_repaired_in_one_round(folder: KernelFolder, runner: Any, store: SQLiteStore,
                                        compiler: Compiler, llm: Any) -> None:
    server, client = llm("agent_repair")
    outcome = run(folder, runner, store, compiler, client=client, iterations=1,
                  auto_approve=True, allow_unverified=True)
    assert outcome.state is AgentState.DONE and outcome.llm_calls == 2
    repair_prompt = server.requests[1].body["messages"][1]["content"]
    assert "[unused_parameter] UNROLL" in repair_prompt
    [row] = store.iterations(outcome.session_id)
    first, second = row.detail["attempts"]
    assert any("UNROLL" in p for p in first["problems"]) and second["problems"] == []
    assert row.detail["validation"]["status"] == "unverified"
    assert "compile" in row.detail["validation"]["checks_passed"]
    [version] = store.template_versions(folder.name)
    assert "UNROLL" not in version.params
    assert [c.request["purpose"] for c in store.llm_calls(outcome.session_id)] == [
        "template", "template-repair-1"]


@pytest.mark.timeout(60)
def test_unapproved_template_waits_in_review_then_resumes(folder: KernelFolder,
                                                          runner: SyntheticRunner,
                                                          store: SQLiteStore,
                                                          compiler: Compiler) -> None:
    bus = EventBus()
    events = collect(bus)
    config = AgentConfig(iterations=1, strategy="random", budget=Budget(max_evaluations=2),
                         shape=SHAPE, dtype=DTYPE)
    machine = AgentMachine(folder, runner=runner, store=store, config=config, events=bus,
                           compiler=compiler)
    outcome = machine.run()
    assert outcome.state is AgentState.REVIEW and outcome.waiting_for_review
    assert outcome.pending_version_id is not None and outcome.current_version_id is None
    assert store.count_trials() == 0 and runner.measure_calls == 0  # nothing tuned
    assert not any(isinstance(e, TrialFinished) for e in events)
    [request] = [e for e in events if isinstance(e, ReviewRequested)]
    assert [r.decision for r in store.reviews(request.version_id)] == ["proposed"]
    assert machine.run().waiting_for_review  # still waiting: no decision was made
    machine.approve("ana", "looks right")
    resumed = machine.run()
    assert resumed.state is AgentState.DONE and store.count_trials() >= 2
    reviews = store.reviews(request.version_id)
    assert [(r.decision, r.reviewer) for r in reviews][-1] == ("approved", "ana")
    assert reviews[-1].approved_text_sha256 == request.template_sha256


@pytest.mark.timeout(60)
def test_offline_path_without_endpoint(folder: KernelFolder, runner: SyntheticRunner,
                                       store: SQLiteStore, compiler: Compiler) -> None:
    bus = EventBus()
    events = collect(bus)
    outcome = run(folder, runner, store, compiler, auto_approve=True, allow_unverified=True, events=bus)
    assert outcome.state is AgentState.DONE and outcome.llm_calls == 0
    [version] = store.template_versions(folder.name)
    assert version.origin == "offline" and version.parent_id is None
    assert version.diff_vs_parent.startswith("--- baseline.cu")
    rows = store.iterations(outcome.session_id)
    assert [r.detail["plan"]["source"] for r in rows] == ["initial", "offline"]
    assert rows[1].detail["plan"]["next_action"] == "tune_more"
    # tune more measured the unmeasured neighbours of iteration 1's best first
    best1 = Config(rows[0].detail["test"]["config"])
    enqueued = [Config(c) for c in rows[1].detail["search"]["enqueued"]]
    assert enqueued and all(sum(best1[k] != c[k] for k in c) == 1 for c in enqueued)
    measured = [t.result for t in store.trials() if t.result.status is not Status.PRUNED]
    assert len(measured) == 2 * EVALS and len({r.config for r in measured}) == 2 * EVALS
    assert [type(e).__name__ for e in events if isinstance(e, TemplateProposed)] == [
        "TemplateProposed"]
    assert [e.source for e in events if isinstance(e, PlanMade)] == ["initial", "offline"]
    assert_speedups_match_store(store, outcome.session_id)


@pytest.mark.replay
@pytest.mark.timeout(60)
def test_curated_template_over_a_real_recording(folder: KernelFolder, store: SQLiteStore,
                                                compiler: Compiler) -> None:
    from workbench.engine.recording import recording_paths
    from workbench.engine.replay import ReplayRunner

    if not recording_paths(folder.path):
        pytest.skip("no recording of silu_and_mul committed yet")
    replay = ReplayRunner(folder)
    shape, dtype = replay.shapes_dtypes[0]
    outcome = run_agent(folder, runner=replay, store=store, compiler=compiler, iterations=2,
                        auto_approve=True, allow_unverified=True, strategy="random", budget=4, shape=shape,
                        dtype=dtype, initial_template=folder.template)
    assert outcome.state is AgentState.DONE
    [version] = store.template_versions(folder.name)
    assert version.origin == "curated"
    sources = {t.result.source for t in store.trials() if t.result.status is Status.OK}
    assert sources and all(s.startswith("replay:") for s in sources)
    assert_speedups_match_store(store, outcome.session_id)
    # a replay cannot measure again: the test step re-measures, and says why it had to
    tests = [r.detail["test"] for r in store.iterations(outcome.session_id)
             if "test" in r.detail]
    assert tests and all(t["confirmed"] is False and "cannot measure again" in t["confirm_note"]
                         for t in tests)
    assert store.remeasurements() == []


# -- the tune step's confirmation ------------------------------------------------------------

def _test_details(store: SQLiteStore, session_id: str) -> list[dict[str, Any]]:
    return [dict(r.detail["test"]) for r in store.iterations(session_id) if "test" in r.detail]


@pytest.mark.timeout(60)
def test_the_tune_step_confirms_like_the_cli_and_the_test_step_reports_the_pick(
        folder: KernelFolder, store: SQLiteStore, compiler: Compiler) -> None:
    runner = SyntheticRunner(folder, folder.template)  # can measure again (under 'read')
    outcome = run_agent(folder, runner=runner, store=store, compiler=compiler, iterations=1,
                        auto_approve=True, allow_unverified=True, strategy="random", budget=6,
                        confirm=3, shape=SHAPE, dtype=DTYPE, initial_template=folder.template)
    assert outcome.state is AgentState.DONE
    [test] = _test_details(store, outcome.session_id)
    assert test["confirmed"] is True and test["confirm_note"] == ""
    # round 1 measured the 3 fastest again, round 2 the pick: both stored, as the CLI does
    rounds = store.remeasurements(shape=SHAPE)
    assert sorted({r.round_index for r in rounds}) == [1, 2]
    assert len([r for r in rounds if r.round_index == 1 and r.result.config]) == 3
    [pick] = [r.result for r in rounds if r.round_index == 2 and r.result.config]
    # the test step reports the confirmed round-2 measurement, beside the same round's
    # baseline, with the tune path's speedup interval
    assert Config(test["config"]) == pick.config
    assert test["best_us"] == pytest.approx(pick.median_us)
    low, high = test["speedup_ci"]
    assert low <= test["speedup"] <= high
    assert test["speedup"] == pytest.approx(test["baseline_us"] / test["best_us"])
    assert [p.best_us for p in speedup_per_iteration(store, outcome.session_id)] == \
        [pytest.approx(pick.median_us)]


@pytest.mark.timeout(60)
def test_confirm_zero_tunes_without_confirmation_and_the_test_step_measures_again(
        folder: KernelFolder, store: SQLiteStore, compiler: Compiler) -> None:
    runner = SyntheticRunner(folder, folder.template)
    outcome = run_agent(folder, runner=runner, store=store, compiler=compiler, iterations=1,
                        auto_approve=True, allow_unverified=True, strategy="random", budget=6,
                        confirm=0, shape=SHAPE, dtype=DTYPE, initial_template=folder.template)
    [test] = _test_details(store, outcome.session_id)
    assert test["confirmed"] is False and test["speedup_ci"] is None
    assert store.remeasurements() == []
    assert test["best_us"] == pytest.approx(test["search_best_us"])  # synthetic: repeatable
    with pytest.raises(Exception, match="confirm must be an integer >= 0"):
        AgentConfig(confirm=-1)


# -- propose, profile ------------------------------------------------------------------------

def test_propose_only_offline(folder: KernelFolder, compiler: Compiler) -> None:
    proposed = propose_only(folder, compiler=compiler)
    assert proposed.origin == "offline" and proposed.report is not None
    assert proposed.report.status == "unverified"
    assert proposed.diff.startswith("--- baseline.cu")
    assert proposed.template is not None and not isinstance(proposed.template, TemplateProposal)
    table = parameter_table(proposed.template)
    assert "BLOCK_THREADS" in table and "32..1024" in table and "2, 4, 8, 16" in table


def test_ncu_csv_parsing_and_no_profiler_here(folder: KernelFolder, compiler: Compiler) -> None:
    text = ('==PROF== Connected to process 1\n"ID","Process ID","Kernel Name","Metric Name",'
            '"Metric Unit","Metric Value"\n"0","1","k","dram__throughput.avg.pct_of_peak_'
            'sustained_elapsed","%","87.31"\n"0","1","k","gpu__time_duration.sum","nsecond",'
            '"4,512"\n"0","1","k","launch__grid_size","","n/a"\n')
    assert parse_ncu_csv(text) == {
        "dram__throughput.avg.pct_of_peak_sustained_elapsed (%)": 87.31,
        "gpu__time_duration.sum (nsecond)": 4512.0, "launch__grid_size": "n/a"}
    assert parse_ncu_csv("no csv here") == {}
    # no ncu / no GPU on this machine: None, never an exception
    import shutil
    if shutil.which("ncu") is None:
        assert profile_config(folder, folder.template, folder.template.default_config(),
                              SHAPE, DTYPE, compiler=compiler) is None


def test_agent_config_rejects_unbounded_budgets() -> None:
    from workbench.agent import AgentError

    with pytest.raises(AgentError, match="iterations"):
        AgentConfig(iterations=0)
    with pytest.raises(AgentError, match="budget"):
        AgentConfig(budget=Budget())
