"""GPU tier: fused_add_rmsnorm's streaming cache hint (``CACHE_HINT`` 1: ld/st.global.cs on
the rows) verified against the reference on both input sets, with the row in registers and
in shared memory, hidden at run time and compiled in. Run on the GPU machine:
``pytest -m gpu``."""

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
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_streaming_hint_configs_verify(dtype: str) -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "fused_add_rmsnorm")
    base = folder.template.default_config().replace(CACHE_HINT=1)
    checked = 0
    with LocalRunner(folder, settings=FAST) as runner:
        for shape in ("small", "decode"):
            hidden = int(folder.shape_values(shape)["hidden"])
            space = folder.template.space(folder.env(shape, dtype))
            configs = [c for c in (base, base.replace(ROW_IN_REGS=1, ITEMS=2, BLOCK_THREADS=256),
                                   base.replace(ROW_IN_REGS=1, HIDDEN_CONST=hidden, VEC_BYTES=8,
                                                BLOCK_THREADS=512))
                       if c in space]
            for r in runner.measure([Candidate(c, shape, dtype) for c in configs]):
                assert r.status is Status.OK, (shape, dict(r.config), r.reason)
                checked += 1
    assert checked >= 4
