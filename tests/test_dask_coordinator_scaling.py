"""The CPU-only scaling check's parts (benchmarks/cluster/coordinator_scaling.py): the
simulated device (injected clock and sleep: no waiting), the fake nvcc through the real
Compiler, and the device statistics that split idle time at batch boundaries from idle
time inside batches. Pure or local: no Dask cluster, no GPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Status, TrialResult
from workbench.engine.compiler import Compiler
from workbench.engine.runner import PlannedCandidate
from workbench.testing.paced_device import PacedDevice, fake_nvcc
from workbench.testing.synthetic_runner import SyntheticRunner

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1]
SHAPE, DTYPE = "decode", "bf16"


def _scaling_module() -> Any:
    path = ROOT / "benchmarks" / "cluster" / "coordinator_scaling.py"
    spec = importlib.util.spec_from_file_location("coordinator_scaling", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("coordinator_scaling", module)
    spec.loader.exec_module(module)
    return module


def test_device_stats_split_idle_at_batch_boundaries_from_idle_inside_batches() -> None:
    stats = _scaling_module().device_stats

    def row(batch: int, index: int, began: float, ended: float, idle: float | None,
            spin: float = 0.0) -> dict[str, Any]:
        return {"worker": "w0", "task": f"wb-measure-{batch}-{index}", "began": began,
                "ended": ended, "idle_s": idle, "spin_up_s": spin}

    devices = [row(7, 0, 0.00, 0.04, None, 0.2), row(7, 1, 0.05, 0.09, 0.01),
               row(7, 2, 0.19, 0.23, 0.10),  # waited 100 ms inside the batch
               row(9, 0, 0.53, 0.57, 0.30, 0.2)]  # 300 ms at the boundary, paid a spin-up
    got = stats(devices, wall_s=1.0)["w0"]
    assert got["configs"] == 4 and got["busy_s"] == pytest.approx(0.16)
    assert got["busy_share"] == pytest.approx(0.16)
    assert got["spin_ups"] == 2 and got["gaps_over_idle"] == 2
    assert got["batch_boundaries"] == 1
    assert got["idle_at_boundaries_s"] == pytest.approx(0.30)
    assert got["idle_within_batches_s"] == pytest.approx(0.11)


def test_thread_cpu_reads_utime_and_stime() -> None:
    text = "1234 (python3 (x)) S " + " ".join(["0"] * 10) + " 250 50 0 0"
    assert _scaling_module().thread_cpu_s(text, 100.0) == pytest.approx(3.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_fake_nvcc_goes_through_the_real_compiler_and_the_device_paces(
        tmp_path: Path) -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    home = fake_nvcc(tmp_path, tmp_path / "cuda", 0.0, folder.template.entry, "sm_90a")
    compiler = Compiler("sm_90a", nvcc=home / "bin" / "nvcc", cache_dir=tmp_path / "cache")
    clock = _Clock()
    device = PacedDevice(SyntheticRunner(folder, compiler=compiler), device_s=0.04,
                         spin_up_s=0.2, idle_gap_s=0.05, clock=clock, sleep=clock.sleep)
    configs = list(folder.space(SHAPE, DTYPE, device.device))[:3]
    results: list[TrialResult] = []
    for gap in (0.0, 0.01, 0.5):  # first ever, right after, after a long idle
        clock.now += gap
        plan = device.plan(Candidate(configs[len(results)], SHAPE, DTYPE))
        assert isinstance(plan, PlannedCandidate)
        compiled = compiler.compile(plan.instance)
        assert compiled.ok and compiled.usage is not None
        assert compiled.usage.regs_per_thread == 26  # the fake ptxas report was parsed
        results.append(device.finish(plan, compiled))
    assert [r.status for r in results] == [Status.OK] * 3
    assert clock.slept == pytest.approx([0.24, 0.04, 0.24])  # spin-ups after idle only
    assert [r.extra["device"]["spin_up_s"] for r in results] == [0.2, 0.0, 0.2]
    assert results[1].extra["device"]["idle_s"] == pytest.approx(0.01)


def test_the_fake_nvcc_takes_only_checked_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fake nvcc"):
        fake_nvcc(tmp_path, tmp_path / "cuda", 0.1, "k'; rm -rf /; '", "sm_90a")
    with pytest.raises(ValueError, match="compile_s"):
        fake_nvcc(tmp_path, tmp_path / "cuda", 1e9, "kernel", "sm_90a")
