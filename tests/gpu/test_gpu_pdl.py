"""GPU tier: programmatic dependent launch (a template's ``pdl`` expression) through the
worker's driver-API launcher: verified on both input sets and timed, plain and in a CUDA
graph. Run on the GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
FAST = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=200, max_time_s=0.05, timeout_s=10.0)


@pytest.mark.timeout(300)
def test_pdl_configs_are_verified_and_timed_plain_and_in_a_graph() -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    base = folder.template.default_config()
    configs = [base.replace(PDL=1), base.replace(PDL=1, VEC_BYTES=4, ROW_SPLIT=4,
                                                 BLOCK_THREADS=512)]
    assert all(folder.template.launch_for(c, folder.env("decode", "bf16")).pdl for c in configs)
    with LocalRunner(folder, settings=FAST) as runner:
        for shape in ("small", "decode"):
            for r in runner.measure([Candidate(c, shape, "bf16") for c in configs]):
                assert r.status is Status.OK, r.reason
                assert r.extra["launch"]["pdl"] is True
        for r in runner.measure([Candidate(c, "decode", "bf16") for c in configs],
                                condition="graph"):
            assert r.status is Status.OK, r.reason
            assert r.timing is not None and r.timing.median_us > 0
