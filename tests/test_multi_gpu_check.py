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


def test_repeats_scale_against_their_own_first_sweep_and_the_target_reads_the_median(
        check: ModuleType) -> None:
    rows = check.scaling([{"repeat": 0, "gpus": 1, "configs_per_min": 600.0},
                          {"repeat": 0, "gpus": 2, "configs_per_min": 1140.0},
                          {"repeat": 1, "gpus": 1, "configs_per_min": 500.0},
                          {"repeat": 1, "gpus": 2, "configs_per_min": 850.0},
                          {"repeat": 2, "gpus": 1, "configs_per_min": 650.0},
                          {"repeat": 2, "gpus": 2, "configs_per_min": 1196.0}])
    assert [r["speedup"] for r in rows] == [1.0, 1.9, 1.0, 1.7, 1.0, 1.84]
    for row in rows:
        row["same_pick_as_first"] = True
    got = check.targets({"sweeps": rows})
    assert got["speedups_2_gpus"] == [1.9, 1.7, 1.84]
    assert got["speedup_2_gpus"] == 1.84 and got["scales_1_8x_on_2"] is True
    rows[3]["speedup"] = 1.5
    rows[5]["speedup"] = 1.79
    assert check.targets({"sweeps": rows})["scales_1_8x_on_2"] is False
    # a 2-GPU sweep whose repeat lost its 1-GPU sweep (skipped for time) is not counted
    assert check.targets({"sweeps": rows[1:2]})["speedup_2_gpus"] is None
    assert check.median([3.0, 1.0, 2.0, 10.0]) == 2.5 and check.median([]) is None


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
    assert check.main(["--plan", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert '"kernel": "fused_add_rmsnorm"' in out and '"batch": "auto"' in out
    assert f"{tmp_path}/results/cluster/" in out and "multi-gpu-dask-sweep-" in out
    assert not (tmp_path / "results").exists()


def test_task_phases_split_compile_and_measure_and_each_devices_busy_time(
        check: ModuleType) -> None:
    records = [
        {"key": "wb-compile-aa-1", "worker": "w1",
         "startstops": [{"action": "transfer", "start": 0.0, "stop": 0.5},
                        {"action": "compute", "start": 0.0, "stop": 1.0}]},
        {"key": "wb-compile-bb-1", "worker": "w2",
         "startstops": [{"action": "compute", "start": 0.5, "stop": 1.5}]},
        # two measure tasks overlapping on w1 (waiting for the runner's turn): 1.0-1.6
        {"key": "wb-measure-1-0", "worker": "w1",
         "startstops": [{"action": "compute", "start": 1.0, "stop": 1.4}]},
        {"key": "wb-measure-1-1", "worker": "w1",
         "startstops": [("compute", 1.2, 1.6)]},
        {"key": "wb-measure-under-read-3", "worker": "w1",
         "startstops": [{"action": "compute", "start": 3.0, "stop": 3.5}]},
    ]
    phases = check.task_phases(records, wall_s=2.0)
    assert phases["compile"] == {"count": 2, "compute_s": 2.0, "mean_s": 1.0}
    assert phases["measure"]["count"] == 2 and phases["measure"]["compute_s"] == 0.8
    assert phases["other"]["count"] == 1  # a confirmation task is not the sweep's
    assert phases["compile_concurrency"] == 1.0
    assert phases["measure_busy_s"] == {"w1": 0.6}
    assert phases["measure_busy_share"] == {"w1": 0.3}


def test_cpu_share_cores_and_the_device_folder(check: ModuleType) -> None:
    before = "cpu  9 9 9 9 9 0 0 0\ncpu0 10 0 10 80 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\n"
    after = "cpu  9 9 9 9 9 0 0 0\ncpu0 60 0 20 120 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0\n"
    assert check.cpu_times(before, [0]) == (20.0, 100.0)
    assert check.cpu_busy_share(check.cpu_times(before, [0]),
                                check.cpu_times(after, [0])) == 0.6
    assert check.cpu_busy_share(check.cpu_times(before, [0, 1]),
                                check.cpu_times(after, [0, 1])) == 0.3
    assert check.cores_for(1, 16, range(32)) == list(range(16))
    assert check.cores_for(2, 16, range(32)) == list(range(32))
    assert check.cores_for(4, 16, range(32)) == list(range(32))  # not enough: all of them
    assert check.cores_for(1, 0, range(8)) == list(range(8))
    assert check.device_folder(["NVIDIA H100 80GB HBM3"] * 2) == "h100x2"
    assert check.device_folder(["NVIDIA H200"]) == "h200"


def test_trial_phases_sum_the_stored_seconds(check: ModuleType) -> None:
    from workbench.core.records import Status, TrialResult

    results = [TrialResult(config=Config(A=i), shape="s", dtype="bf16", status=Status.OK,
                           compile_s=1.0 + i, verify_s=0.01, bench_s=None) for i in range(3)]
    phases = check.trial_phases(results)
    assert phases["compile_s"] == {"sum": 6.0, "count": 3, "mean": 2.0}
    assert phases["verify_s"]["sum"] == 0.03 and phases["bench_s"]["count"] == 0


def test_trial_phases_summarize_each_trials_phase_seconds(check: ModuleType) -> None:
    from workbench.core.records import Status, TrialResult

    results = [TrialResult(config=Config(A=i), shape="s", dtype="bf16", status=Status.OK,
                           extra={"phases_s": {"spin_up_s": 0.2 if i == 0 else 0.0,
                                               "wait_turn_s": 0.1}}) for i in range(4)]
    phases = check.trial_phases(results)["phases_s"]
    assert phases["spin_up_s"] == {"sum": 0.2, "count": 4, "mean": 0.05, "nonzero": 1}
    assert phases["wait_turn_s"]["sum"] == 0.4
    assert "phases_s" not in check.trial_phases(results[:0])


def _task(key: str, worker: str, start: float, stop: float) -> dict[str, object]:
    return {"key": key, "worker": worker,
            "startstops": [{"action": "compute", "start": start, "stop": stop}]}


def test_idle_gaps_file_each_gap_once_by_why(check: ModuleType) -> None:
    a = "tcp://a"
    records = [
        _task("wb-compile-h1-1", "tcp://c", 0.0, 1.0),
        _task("wb-compile-h2-1", "tcp://c", 0.0, 1.0),
        _task("wb-compile-h3-1", "tcp://c", 0.0, 2.5),
        _task("wb-compile-h4-2", "tcp://c", 0.0, 3.2),
        _task("wb-measure-1-0", a, 1.0, 2.0),
        # 2.0 .. 2.2: h2 compiled at 1.0, its measure starts at 2.2: a late dispatch
        _task("wb-measure-1-1", a, 2.2, 2.4),
        # 2.4 .. 2.6: h3's compile ends at 2.5, nothing else compiled waits: starved
        _task("wb-measure-1-2", a, 2.6, 3.0),
        # 3.0 .. 3.5: the next search batch
        _task("wb-measure-2-0", a, 3.5, 4.0),
        _task("wb-measure-under-read-7", a, 4.2, 4.9),  # a confirmation: not the sweep
        _task("wb-compile-nvcc-h9-3", "tcp://c", 4.0, 4.5),
    ]
    gaps = check.idle_gaps(records, began=0.5, ended=4.25)[a]
    assert gaps["head"] == {"count": 1, "s": 0.5}
    assert gaps["compiled_waiting"] == {"count": 1, "s": 0.2}
    assert gaps["compile_starved"] == {"count": 1, "s": 0.2}
    assert gaps["boundary"] == {"count": 1, "s": 0.5}
    assert gaps["tail"] == {"count": 1, "s": 0.25}


def test_idle_gaps_ignore_overlapping_measures_and_tiny_gaps(check: ModuleType) -> None:
    a = "tcp://a"
    records = [_task("wb-measure-1-0", a, 0.0, 1.0), _task("wb-measure-1-1", a, 0.5, 0.8),
               _task("wb-measure-1-2", a, 1.001, 2.0)]
    gaps = check.idle_gaps(records, began=0.0, ended=2.0)[a]
    assert all(v["count"] == 0 for v in gaps.values()), gaps


def test_gap_causes_name_what_the_next_measure_waited_for(check: ModuleType) -> None:
    a = "tcp://a"
    records = [
        _task("wb-compile-h0-1", "tcp://c", 0.0, 0.5),
        _task("wb-compile-h1-1", "tcp://c", 0.0, 1.2),   # done after the gap began
        _task("wb-compile-h2-1", "tcp://c", 0.0, 0.5),
        _task("wb-compile-h3-1", "tcp://c", 0.0, 0.5),
        _task("wb-measure-1-0", a, 0.6, 1.0),
        _task("wb-measure-1-1", a, 1.3, 1.6),   # gap 1.0..1.3: compile late
        _task("wb-measure-1-2", a, 2.0, 2.2),   # gap 1.6..2.0: submitted at 1.9
        _task("wb-measure-1-3", a, 2.5, 2.6),   # gap 2.2..2.5: submitted at 2.0, started late
    ]
    submits = {"wb-measure-1-0": ("wb-compile-h0-1", 0.55),
               "wb-measure-1-1": ("wb-compile-h1-1", 1.25),
               "wb-measure-1-2": ("wb-compile-h2-1", 1.9),
               "wb-measure-1-3": ("wb-compile-h3-1", 2.0)}
    causes = check.gap_causes(records, submits)[a]
    assert causes["compile_late"] == {"count": 1, "s": 0.3}
    assert causes["dispatch_late"] == {"count": 1, "s": 0.4}
    assert causes["start_late"] == {"count": 1, "s": 0.3}
    assert causes["unknown"] == {"count": 0, "s": 0}
    assert check.gap_causes(records, {})[a]["unknown"]["count"] == 3


def test_trace_dispatch_notes_each_submission_and_unwraps(check: ModuleType) -> None:
    class Runner:
        def _submit_measure(self, candidate: object, artifact: object, key: str,
                            index: int) -> str:
            return f"{key}:{index}"

    class Future:
        key = "wb-compile-h-1"

    runner = Runner()
    with check.trace_dispatch(runner) as submits:
        assert runner._submit_measure(None, Future(), "wb-measure-1-0", 0) == "wb-measure-1-0:0"
    assert submits["wb-measure-1-0"][0] == "wb-compile-h-1"
    assert "_submit_measure" not in vars(runner)


def test_measures_per_gpu_reaches_every_module_that_read_it(check: ModuleType) -> None:
    from workbench.engine import dask_cluster, dask_runner, dask_tasks

    before = check.measures_per_gpu()
    try:
        check.set_measures_per_gpu(8)
        assert dask_tasks.MEASURES_PER_GPU == dask_runner.MEASURES_PER_GPU == 8
        assert dask_cluster.threads_per_gpu_worker(2, cpus=32) == 16 + 8
        with pytest.raises(SystemExit, match="positive integer"):
            check.set_measures_per_gpu(0)
    finally:
        check.set_measures_per_gpu(before)
    assert check.measures_per_gpu() == before


def test_queued_per_gpu_sets_the_runners_in_flight_limit(check: ModuleType) -> None:
    from workbench.engine import dask_runner

    before = check.queued_per_gpu()
    runner = object.__new__(dask_runner.DaskRunner)
    runner.workers = ("a", "b")
    try:
        check.set_queued_per_gpu(0)
        assert runner.in_flight_limit == 2 * dask_runner.MEASURES_PER_GPU
        check.set_queued_per_gpu(3)
        assert runner.in_flight_limit == 2 * (dask_runner.MEASURES_PER_GPU + 3)
        with pytest.raises(SystemExit, match="0 or a positive integer"):
            check.set_queued_per_gpu(-1)
    finally:
        check.set_queued_per_gpu(before)
    assert check.queued_per_gpu() == before


def test_the_boundary_reserve_knob_reaches_the_runner(check: ModuleType) -> None:
    from workbench.engine import dask_runner

    before = dask_runner.BOUNDARY_RESERVE_PER_GPU
    try:
        check.set_boundary_reserve_per_gpu(0)
        assert dask_runner.BOUNDARY_RESERVE_PER_GPU == 0
        with pytest.raises(SystemExit, match="0 or a positive"):
            check.set_boundary_reserve_per_gpu(-2)
    finally:
        check.set_boundary_reserve_per_gpu(before)
    assert before == dask_runner.BOUNDARY_RESERVE_PER_GPU
