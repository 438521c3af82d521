"""GPU tier for the finalists' L2 hit rates and the column-walk split: on the GPU machine
Nsight Compute profiles a 2-D tiled kernel's configs through the live runner (one ncu
process, a rate per config), and every WALK_SPLIT of the held-out col_sum template agrees
with the kernel as written (the sum reordered within the folder's tolerance). Run on the
GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Config, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.ncu import finalist_l2
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
FAST = BenchSettings(warmup_ms=0.5, min_reps=3, max_reps=10, max_time_s=0.02, timeout_s=4.0)


def test_finalists_of_the_transpose_get_an_l2_hit_rate_each() -> None:
    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH on this GPU machine")
    folder = load_kernel_folder(BENCH / "corpus" / "transpose")
    default = dict(folder.template.default_config())
    configs = [Config({**default, "BLOCK_ORDER": order}) for order in (0, 1, 2)]
    with LocalRunner(folder, settings=FAST) as runner:
        results = list(runner.measure([Candidate(c, "large", "fp32") for c in configs]))
        assert all(r.status is Status.OK for r in results), [r.reason for r in results]
        profile = finalist_l2(folder, folder.template, runner, results, "large", "fp32")
    assert profile.note == "" and len(profile.finalists) == 3
    for f in profile.finalists:
        assert f.l2_hit_pct is not None and 0.0 <= f.l2_hit_pct <= 100.0
        assert f.median_us is not None and f.median_us > 0


def test_every_walk_split_of_col_sum_matches_the_kernel_as_written() -> None:
    folder = load_kernel_folder(BENCH / "corpus_holdout" / "col_sum")
    default = dict(folder.template.default_config())
    configs = [Config({**default, "WALK_SPLIT": s, "BLOCK_THREADS": b, "ITEMS_PER_THREAD": i})
               for s, b, i in ((1, 256, 1), (2, 128, 2), (4, 64, 1), (8, 32, 4), (32, 32, 1))]
    with LocalRunner(folder, settings=FAST) as runner:
        for shape in ("small", "large"):
            results = list(runner.measure([Candidate(c, shape, "fp32") for c in configs]))
            bad = [(dict(r.config), r.status.value, r.reason[:200]) for r in results
                   if r.status is not Status.OK]
            assert not bad, (shape, bad)
