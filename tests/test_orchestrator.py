"""The search loop on the SYNTHETIC runner with real SQLite files: budgets, resume,
thread control, edits mid-run, pruning, events after storage, and a SIGKILL mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers_fake_runner import SyntheticRunner, synthetic_params, synthetic_space

from workbench.core.errors import EmptySpaceError, SearchError, UnknownStrategyError
from workbench.core.events import (
    BestImproved,
    EventBus,
    PhaseChanged,
    SearchFinished,
    TrialFinished,
    TrialStarted,
)
from workbench.core.hardware import get_device
from workbench.core.params import Choice, IntRange, Pow2Range
from workbench.core.records import Config, Status
from workbench.core.space import SearchSpace
from workbench.core.template import LaunchRules
from workbench.search import Budget, LaunchPruner, Search, SearchConfig
from workbench.search.pruning import (
    NeighbourModel,
    PruneDecision,
    launch_score,
    order_by_score,
    resource_decision,
)
from workbench.store.base import Provenance
from workbench.store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[1]
PROV = Provenance("f" * 64, "nvcc 13.0", "-O3", "sm_90a", "synthetic", "0")


def make_search(store: SQLiteStore | None, runner: SyntheticRunner, *, shapes=("a",),
                strategy: str = "exhaustive", budget: Budget | None = None, **kw) -> Search:
    spaces = kw.pop("spaces", None) or {s: synthetic_space() for s in shapes}
    return Search(spaces, runner,
                  SearchConfig(tuple(shapes), "bf16", strategy=strategy,
                               budget=budget or Budget(), **kw.pop("config", {})),
                  store=store, provenance=PROV if store is not None else None, **kw)


@pytest.mark.parametrize("bad", [0, -3])
def test_budget_zero_or_negative_is_an_error(bad: int) -> None:
    with pytest.raises(SearchError, match="max_evaluations"):
        Budget(max_evaluations=bad)
    with pytest.raises(SearchError, match="patience"):
        Budget(patience=bad)
    with pytest.raises(SearchError, match="max_wall_s"):
        Budget(max_wall_s=float(bad))


def test_unknown_strategy_and_missing_provenance(tmp_path: Path) -> None:
    with pytest.raises(UnknownStrategyError):
        make_search(None, SyntheticRunner(), strategy="nope")
    with pytest.raises(SearchError, match="provenance"):
        Search({"a": synthetic_space()}, SyntheticRunner(), SearchConfig(("a",), "bf16"),
               store=SQLiteStore(tmp_path / "s.db"))


def test_zero_point_space_names_binding_constraint() -> None:
    space = synthetic_space(("BLOCK * ITEMS <= 2048", "BLOCK > 4096"))
    with pytest.raises(EmptySpaceError) as info:
        make_search(None, SyntheticRunner(), spaces={"a": space})
    assert info.value.binding == "BLOCK > 4096"


def test_one_point_space() -> None:
    space = SearchSpace([Pow2Range(name="BLOCK", min=64, max=64)])
    runner = SyntheticRunner(failures=False)
    outcome = make_search(None, runner, spaces={"a": space}, strategy="tpe",
                          budget=Budget(max_evaluations=10)).run()
    assert outcome.shapes["a"].reason == "exhausted"
    assert len(runner.measured) == 1 and outcome.best["a"].config == Config(BLOCK=64)


def test_store_before_events_budget_and_best_per_shape(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    bus = EventBus()
    seen: list[object] = []

    def check(event: object) -> None:
        if isinstance(event, TrialFinished):
            r = event.result
            assert store.has_trial(PROV, r.config.key(), r.shape, r.dtype)
        seen.append(event)

    bus.subscribe(check)
    def broken(event: object) -> None:
        raise RuntimeError("subscriber bug")

    bus.subscribe(broken)  # a broken subscriber never breaks the search
    runner = SyntheticRunner()
    search = make_search(store, runner, shapes=("a", "b"), strategy="random",
                         budget=Budget(max_evaluations=12), events=bus,
                         baselines_us={"a": 1000.0})
    outcome = search.run()
    assert outcome.reason == "completed"
    assert {s: o.reason for s, o in outcome.shapes.items()} == {"a": "budget", "b": "budget"}
    assert len(runner.measured) == 24 and store.count_trials(PROV) == 24
    finished = [e for e in seen if isinstance(e, TrialFinished)]
    assert [e.index for e in finished] == list(range(24))
    assert sum(isinstance(e, TrialStarted) for e in seen) == 24
    for shape in ("a", "b"):
        ok = [e.result.median_us for e in finished
              if e.result.shape == shape and e.result.median_us is not None]
        assert outcome.best[shape].median_us == min(ok)
    improved = [e for e in seen if isinstance(e, BestImproved) and e.result.shape == "a"]
    assert improved[0].previous_us is None
    assert improved[-1].speedup_vs_baseline == pytest.approx(
        1000.0 / (improved[-1].result.median_us or 1.0))
    assert isinstance(seen[-1], SearchFinished) and seen[-1].evaluated == 24
    # the default config is measured first, on every shape
    assert runner.measured[0].config == synthetic_space().default_config()


def test_resume_never_remeasures(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = SyntheticRunner()
    make_search(SQLiteStore(path), first, strategy="tpe", budget=Budget(max_evaluations=15)).run()
    second = SyntheticRunner()
    outcome = make_search(SQLiteStore(path), second, strategy="tpe").run()
    assert outcome.shapes["a"].reason == "exhausted"
    done = {c.config for c in first.measured}
    assert not done & {c.config for c in second.measured}
    assert len(first.measured) + len(second.measured) == synthetic_space().size
    # same budget again: nothing left to do
    third = SyntheticRunner()
    make_search(SQLiteStore(path), third, budget=Budget(max_evaluations=15)).run()
    assert third.measured == []


def test_suggestions_after_default_then_strategy() -> None:
    picks: list[dict[str, int | str | bool]] = [{"BLOCK": 256, "ITEMS": 3, "LOAD": "vector"}, {"BLOCK": 64}]
    runner = SyntheticRunner()
    make_search(None, runner, strategy="random", suggestions=picks,
                budget=Budget(max_evaluations=5)).run()
    got = [c.config for c in runner.measured]
    default = synthetic_space().default_config()
    assert got[:3] == [default, Config(picks[0]), default.replace(BLOCK=64)]


def test_patience_and_wall_time() -> None:
    runner = SyntheticRunner()
    outcome = make_search(None, runner, strategy="exhaustive", budget=Budget(patience=3)).run()
    assert outcome.shapes["a"].reason in ("patience", "exhausted")
    assert outcome.shapes["a"].reason == "patience"
    # wall time on an injected clock: each measurement takes 0.05 s of it, no sleeping
    now = [0.0]
    slow = SyntheticRunner(on_measure=lambda: now.__setitem__(0, now[0] + 0.05))
    outcome = make_search(None, slow, budget=Budget(max_wall_s=0.3),
                          clock=lambda: now[0]).run()
    assert outcome.reason == "time" and outcome.wall_s == pytest.approx(len(slow.measured) * 0.05)
    assert len(slow.measured) == 6  # 6 x 0.05 s reaches the 0.3 s budget


def _hold_after(search: Search, runner: SyntheticRunner, trials: int) -> int:
    """Start ``search`` on a gated runner, let ``trials`` through, pause, let the trial in
    flight finish and wait until the pause holds: the number of trials measured by then."""
    search.start()
    runner.allow(trials)
    runner.wait_measured(trials)  # the loop now waits for the next trial (or its batch)
    search.pause()
    assert search.state == "paused"
    runner.allow(1)  # the trial in flight may finish; then the pause takes hold
    assert search.wait_paused(timeout_s=10)
    held = len(runner.measured)
    assert held in (trials, trials + 1)  # at most the trial in flight
    return held


@pytest.mark.timeout(30)
def test_pause_resume_stop_from_another_thread(tmp_path: Path) -> None:
    runner = SyntheticRunner(gated=True)  # each trial waits until the test allows it
    bus = EventBus()
    phases: list[str] = []
    bus.subscribe(lambda e: phases.append(e.phase) if isinstance(e, PhaseChanged) else None)
    search = make_search(SQLiteStore(tmp_path / "s.db"), runner, events=bus)
    held = _hold_after(search, runner, 3)
    runner.open()  # the runner would measure anything now: a held loop asks for nothing
    assert len(runner.measured) == held and search.wait_paused(timeout_s=0)
    search.resume()
    runner.wait_measured(held + 3)
    assert not search.wait_paused(timeout_s=0)
    search.stop()
    outcome = search.join(timeout_s=5)
    assert outcome is not None and outcome.reason == "stopped"
    assert search.state == "finished"
    assert len(runner.measured) < synthetic_space().size
    assert "paused" in phases and "resumed" in phases


@pytest.mark.timeout(30)
def test_a_stop_ends_a_held_search_without_another_trial(tmp_path: Path) -> None:
    runner = SyntheticRunner(gated=True)
    search = make_search(SQLiteStore(tmp_path / "s.db"), runner)
    held = _hold_after(search, runner, 2)
    runner.open()
    search.stop()
    outcome = search.join(timeout_s=5)
    assert outcome is not None and outcome.reason == "stopped"
    assert len(runner.measured) == held  # stopped where it was held


@pytest.mark.timeout(30)
def test_edit_params_mid_run(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    runner = SyntheticRunner(gated=True)
    search = make_search(store, runner, strategy="exhaustive")  # BLOCK 32 first in order
    _hold_after(search, runner, 8)
    before = list(runner.measured)
    narrowed = [Pow2Range(name="BLOCK", min=32, max=64, default=32), *synthetic_params()[1:]]
    search.edit_params(narrowed)
    # an edit that leaves nothing is refused in the caller's thread, changing nothing
    with pytest.raises(EmptySpaceError):
        search.edit_params([Pow2Range(name="BLOCK", min=4096, max=4096, default=4096),
                            IntRange(name="ITEMS", min=6, max=6, default=6),
                            Choice(name="LOAD", values_=("plain",), default="plain")])
    runner.open()
    search.resume()
    outcome = search.join(timeout_s=20)
    assert outcome is not None and outcome.shapes["a"].reason == "exhausted"
    space = search.space("a")
    assert space.size == 24
    after = runner.measured[len(before):]
    assert all(c.config in space for c in after)
    configs = [c.config for c in runner.measured]
    assert len(configs) == len(set(configs))  # nothing measured twice across the edit
    assert {c for c in configs if c in space} == set(space)
    assert outcome.shapes["a"].evaluated == 24
    assert store.count_trials(PROV) == len(configs)  # points outside stay in the store


def test_edit_excluding_every_measured_point() -> None:
    runner = SyntheticRunner(failures=False)
    search = make_search(None, runner, strategy="exhaustive", budget=Budget(max_evaluations=4))
    search.run()
    # the default (BLOCK=128) first, then space order (BLOCK=32 ...)
    assert search.best("a") is not None and all(int(c.config["BLOCK"]) <= 128
                                                for c in runner.measured)
    search.edit_params([Pow2Range(name="BLOCK", min=256, max=512, default=256),
                        *synthetic_params()[1:]])
    assert search.best("a") is None and search.evaluated("a") == 0
    assert len(search.results("a", in_space=False)) == 4


def test_pruners_keep_reasons_and_spare_the_runner(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    rules = LaunchRules.parse(grid=["ceil_div(tokens, ITEMS)"], block=["BLOCK * 4"])
    pruner = LaunchPruner(rules, get_device("h100"), lambda shape: {"tokens": 4096})
    runner = SyntheticRunner()
    outcome = make_search(store, runner, strategy="exhaustive", pruners=[pruner]).run()
    assert all(int(c.config["BLOCK"]) * 4 <= 1024 for c in runner.measured)
    pruned = [t.result for t in store.trials(PROV) if t.result.status is Status.PRUNED]
    assert pruned and all(r.config["BLOCK"] == 512 for r in pruned)
    assert "max_threads_per_block=1024" in pruned[0].reason
    assert outcome.shapes["a"].pruned == len(pruned)


def test_resource_decisions_and_model_order() -> None:
    from workbench.core.records import ResourceUsage

    h100 = get_device("h100")
    config = Config(BLOCK=256)
    assert resource_decision(config, ResourceUsage(regs_per_thread=32), h100, 256) is None
    big = resource_decision(config, ResourceUsage(32, static_smem_bytes=300_000), h100, 256)
    assert isinstance(big, PruneDecision) and "smem_per_block_optin_bytes" in big.reason
    low = resource_decision(config, ResourceUsage(regs_per_thread=255), h100, 256,
                            min_occupancy=0.5)
    assert low is not None and "below the floor" in low.reason
    spill = resource_decision(config, ResourceUsage(32, spill_store_bytes=8), h100, 256,
                              allow_spills=False)
    assert spill is not None and "spill" in spill.reason
    rules = LaunchRules.parse(grid=["ceil_div(tokens, BLOCK)"], block=["BLOCK"])
    env = {"tokens": 1 << 20}
    ordered = order_by_score([Config(BLOCK=b) for b in (32, 2048, 256)],
                             lambda c: launch_score(c, rules, env, h100))
    assert ordered[-1] == Config(BLOCK=2048)  # cannot launch: last
    assert ordered[0] == Config(BLOCK=256)  # BLOCK=32 is capped by blocks/SM: low occupancy
    model = NeighbourModel([Pow2Range(name="BLOCK", min=32, max=1024)], k=1)
    model.add(Config(BLOCK=32), 10.0)
    model.add(Config(BLOCK=1024), 100.0)
    near32, near1024 = model.predict([Config(BLOCK=64), Config(BLOCK=512)])
    assert near32 < near1024


_KILLED_SEARCH = textwrap.dedent("""
    import sys
    sys.path[:0] = [{repo!r}, {tests!r}]
    from helpers_fake_runner import SyntheticRunner, synthetic_space
    from workbench.search import Budget, Search, SearchConfig
    from workbench.store.base import Provenance
    from workbench.store.sqlite import SQLiteStore
    prov = Provenance("f" * 64, "nvcc 13.0", "-O3", "sm_90a", "synthetic", "0")
    # 12 trials, then the 13th waits in the runner (the trial in flight) until the kill
    runner = SyntheticRunner(gated=True, log_path="/dev/stdout")
    runner.allow(12)
    Search({{"a": synthetic_space()}}, runner, SearchConfig(("a",), "bf16", strategy="random"),
           store=SQLiteStore(sys.argv[1]), provenance=prov).run()
""")


@pytest.mark.timeout(60)
def test_sigkill_mid_run_then_resume(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    script = _KILLED_SEARCH.format(repo=str(REPO), tests=str(REPO / "tests"))
    proc = subprocess.Popen([sys.executable, "-c", script, str(db)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:  # each line is written as a trial finishes, before the search stores it
        lines = [proc.stdout.readline() for _ in range(12)]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert all(line.startswith("a\t") for line in lines), lines
    measured_by_child = {line.rstrip("\n").split("\t")[1] for line in lines}
    assert len(measured_by_child) == 12
    store = SQLiteStore(db)
    stored = {t.result.config.key() for t in store.trials(PROV)}
    assert stored <= measured_by_child
    assert len(measured_by_child - stored) <= 1  # only the trial in flight can be lost
    size = synthetic_space().size
    assert len(stored) < size
    runner = SyntheticRunner()
    outcome = make_search(store, runner, strategy="random").run()
    resumed = {c.config.key() for c in runner.measured}
    assert not resumed & stored  # nothing measured twice
    assert len(runner.measured) == size - len(stored)
    assert store.count_trials(PROV) == size and outcome.shapes["a"].evaluated == size
