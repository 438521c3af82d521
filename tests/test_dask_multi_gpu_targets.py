"""gpu_checks/multi_gpu_dask.py's summaries for issue 29 item 5 (pure): what preceded the
sweep's timings (the spin-up rule's reasons and its trust check against the timing gate's
own clock) and the targets read off a run's report."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from workbench.core.records import ClockStats, Config, Status, TimingMethod, TrialResult
from workbench.engine.spin_up import SpinUp, SpinUpReason

pytestmark = pytest.mark.timeout(60)

CHECK = Path(__file__).resolve().parents[1] / "gpu_checks" / "multi_gpu_dask.py"


@pytest.fixture(scope="module")
def check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multi_gpu_dask_targets", CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _trial(i: int, spin: SpinUp | None, gate_min_mhz: float | None) -> TrialResult:
    method = None
    if gate_min_mhz is not None:
        method = TimingMethod(timer="cupti", flush="read", gated=True,
                              sm_clock=ClockStats(median_mhz=1980.0, min_mhz=gate_min_mhz,
                                                  max_mhz=1980.0, batches=4))
    extra: dict[str, Any] = {"spin_up": spin.to_message()} if spin is not None else {}
    return TrialResult(config=Config({"B": i}), shape="s", dtype="bf16", status=Status.OK,
                       method=method, extra=extra)


def test_spin_up_summary_counts_reasons_and_checks_the_warm_starts(check: ModuleType) -> None:
    warm = SpinUp(ran=False, reason=SpinUpReason.WARM, idle_s=0.2, sm_clock_mhz=1980.0,
                  reference_mhz=1980.0)
    trials = [
        _trial(0, SpinUp(ran=True, reason=SpinUpReason.LONG_IDLE, idle_s=5.0,
                         sm_clock_mhz=345.0, reference_mhz=1980.0, spin_up_s=0.2), 1980.0),
        _trial(1, SpinUp(ran=False, reason=SpinUpReason.RECENT, idle_s=0.01,
                         reference_mhz=1980.0), 1980.0),
        _trial(2, warm, 1965.0),
        _trial(3, SpinUp(ran=False, reason=SpinUpReason.WARM, idle_s=0.3, sm_clock_mhz=1890.0,
                         reference_mhz=1980.0), 1700.0),  # the gate disagreed
        _trial(4, SpinUp(ran=True, reason=SpinUpReason.RETIMED, idle_s=0.3,
                         sm_clock_mhz=1980.0, reference_mhz=1980.0, spin_up_s=0.2,
                         retimed=True), 1980.0),
        _trial(5, None, None),  # a replayed or pruned trial says nothing
    ]
    got = check.spin_up_summary(trials)
    assert got["timings"] == 5 and got["spun_up"] == 2 and got["retimed"] == 1
    assert got["by_reason"] == {"busy moments ago": 1, "clock warm": 2,
                                "cold timing retimed": 1, "long idle": 1}
    assert got["warm_nvml_mhz_min"] == 1890.0 and got["warm_gate_mhz_min"] == 1700.0
    assert got["warm_gate_under_fraction"] == 1
    assert check.spin_up_summary([])["timings"] == 0


def test_targets_read_the_report(check: ModuleType) -> None:
    report = {"sweeps": [{"gpus": 1, "speedup": 1.0}, {"gpus": 2, "speedup": 1.83,
                                                        "same_pick_as_first": True}],
              "direct_pick": {"same_pick_as_cluster": False},
              "cli": {"direct": {"condition_table": True},
                      "cluster": {"condition_table": True}, "cluster_faster": True},
              "kill": {"exactly_once": True}}
    assert check.targets(report) == {
        "speedup_2_gpus": 1.83, "speedups_2_gpus": [1.83], "scales_1_8x_on_2": True,
        "picks_equal_1_vs_2": True,
        "cluster_pick_equals_direct": False, "cli_cluster_faster": True,
        "cli_both_condition_tables": True, "kill_loses_nothing": True}
    slow = {**report, "sweeps": [{"gpus": 1, "speedup": 1.0}, {"gpus": 2, "speedup": 1.54}]}
    assert check.targets(slow)["scales_1_8x_on_2"] is False
    empty = check.targets({})
    assert empty.pop("speedups_2_gpus") == [] and set(empty.values()) == {None}
