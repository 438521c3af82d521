"""The CPU parts of gpu_checks/multi_gpu_dask.py: scaling arithmetic, the exactly-once
accounting of a killed worker's sweep, the time budget and the pick summary (the GPU parts
run on the lent machine)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from workbench.core.conditions import CONDITIONS
from workbench.core.records import Candidate, Config
from workbench.engine.tuning import build_report
from workbench.testing.scripted_conditions import ScriptedConditionRunner, truth_table

pytestmark = pytest.mark.timeout(60)

CHECK = Path(__file__).resolve().parents[1] / "gpu_checks" / "multi_gpu_dask.py"


@pytest.fixture(scope="module")
def check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multi_gpu_dask", CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scaling_is_against_the_first_row(check: ModuleType) -> None:
    rows = check.scaling([{"gpus": 1, "configs_per_min": 600.0},
                          {"gpus": 2, "configs_per_min": 1140.0},
                          {"gpus": 4, "configs_per_min": 2100.0}])
    assert [r["speedup"] for r in rows] == [1.0, 1.9, 3.5]
    assert [r["efficiency"] for r in rows] == [1.0, 0.95, 0.875]
    assert check.scaling([]) == []


def test_exactly_once_names_what_was_lost_twice_or_foreign(check: ModuleType) -> None:
    assert check.stored_once(["a", "b", "c"], ["c", "a", "b"])["exactly_once"]
    bad = check.stored_once(["a", "b", "c"], ["a", "a", "x"])
    assert not bad["exactly_once"]
    assert bad["lost"] == ["b", "c"] and bad["lost_count"] == 2
    assert bad["twice"] == ["a"] and bad["foreign"] == ["x"]
    assert bad["stored"] == 3 and bad["distinct"] == 2


def test_the_deadline_runs_on_an_injected_clock(check: ModuleType) -> None:
    now = [100.0]
    deadline = check.Deadline(2.0, clock=lambda: now[0])
    assert deadline.allows(120.0) and not deadline.allows(121.0)
    now[0] += 90.0
    assert deadline.left_s() == pytest.approx(30.0) and not deadline.allows(60.0)


def test_the_pick_summary_carries_the_condition_tables(check: ModuleType) -> None:
    steady, fast = Config(VEC_BYTES=16, ROW_SPLIT=2), Config(VEC_BYTES=4, ROW_SPLIT=4)
    runner = ScriptedConditionRunner(truth_table({
        None: {"read": 4.94, "write": 8.70, "warm": 4.10, "graph": 3.90},
        fast: {"read": 4.27, "write": 9.20, "warm": 3.60, "graph": 3.40},
        steady: {"read": 4.50, "write": 8.40, "warm": 3.80, "graph": 3.60}}))
    results = list(runner.measure([Candidate(c, "decode", "bf16") for c in (fast, steady)]))
    report = build_report("k", "decode", "bf16", runner, results, confirm=2,
                          conditions=tuple(CONDITIONS))
    summary = check.pick_summary(report)
    assert summary["pick"] == dict(steady) and summary["holds"]
    assert summary["round1"][0]["label"] == "baseline"
    assert len(summary["round2"]) == 2 and summary["measured_on"] == ["direct"]
    none = check.pick_summary(build_report("k", "decode", "bf16", runner, results))
    assert none["pick"] is None


def test_the_plan_runs_without_a_gpu(check: ModuleType, capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    assert check.main(["--plan", "--out", str(tmp_path / "m.json")]) == 0
    assert '"kernel": "fused_add_rmsnorm"' in capsys.readouterr().out
    assert not (tmp_path / "m.json").exists()
