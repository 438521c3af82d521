"""GPU tier: the confirmation's cache conditions run on the device (a CUDA graph included),
for an out-of-place and an in-place kernel. Run on the GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from workbench.core.conditions import CONDITIONS
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.conditions import GRAPH_LAUNCHES
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
FAST = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=200, max_time_s=0.05, timeout_s=10.0)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["silu_and_mul", "fused_add_rmsnorm"])
def test_every_condition_times_the_baseline_and_a_config(name: str) -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / name)
    config = folder.template.default_config()
    with LocalRunner(folder, settings=FAST) as runner:
        read = runner.baseline("decode", "bf16")
        for condition in CONDITIONS:
            base = runner.baseline("decode", "bf16", condition=condition)
            [mine] = runner.measure([Candidate(config, "decode", "bf16")], condition=condition)
            for r in (base, mine):
                assert r.status is Status.OK, (condition, r.reason)
                assert r.timing is not None and r.timing.median_us > 0
            if condition == "graph":
                assert mine.method is not None
                assert mine.method.graph_launches == GRAPH_LAUNCHES
                assert mine.method.flush == "none (graph)"
            else:
                assert mine.method is not None and mine.method.graph_launches == 0
                assert mine.method.flush == {"read": "read", "write": "write",
                                             "warm": "none"}[condition]
                assert mine.timing.l2_flushed == (condition != "warm")
        # measuring under a condition leaves the runner's own settings and baseline as they were
        assert runner.settings == replace(FAST, timer=runner.settings.timer)
        assert runner.baseline("decode", "bf16") is read
