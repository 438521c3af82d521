"""GPU tier: knobs the templates gained in the tenth session, verified against the reference
on both input sets.

silu_and_mul's full-tile mode (``D_CONST``, the shape's d compiled in) and its
fast-math activation (``FAST_EXP`` 2), verified against the reference on both input sets at
shapes whose tiles are not covered exactly (the ``small`` shape: 33 vectors per row, 7
tokens; packed tokens with a partial last block; a row split with a short last chunk) and at
decode, plain and with programmatic dependent launch, with the read-only and the last-use
loads (``LOAD_PATH`` 4). fused_add_rmsnorm's streaming cache
hint (``CACHE_HINT`` 1: ld/st.global.cs on the rows), with the row in registers and in shared
memory, hidden at run time and compiled in. Run on the GPU machine: ``pytest -m gpu``."""

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
def test_full_tile_configs_verify_where_tiles_are_ragged(dtype: str) -> None:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    base = folder.template.default_config()
    knobs = [dict(BLOCK_THREADS=32, VEC_BYTES=8, FAST_EXP=2),                  # 33 vecs / 32 thr
             dict(BLOCK_THREADS=64, VEC_BYTES=4, TOKENS_PER_BLOCK=4, FAST_EXP=2),  # 7 = 4 + 3
             dict(BLOCK_THREADS=128, VEC_BYTES=16, ROW_SPLIT=4, FAST_EXP=0, PDL=1),
             dict(BLOCK_THREADS=512, VEC_BYTES=16, FAST_EXP=1),
             # threads cover the tile exactly, but the grid's last block holds fewer tokens
             # (7 = 2 + 2 + 2 + 1, 99 = 49 * 2 + 1): the 2026-11-24 bug wrote a row past the end
             dict(BLOCK_THREADS=1024, VEC_BYTES=16, TOKENS_PER_BLOCK=2, FAST_EXP=2),
             # last-use loads (LOAD_PATH 4, eleventh session), ragged and whole tiles
             dict(BLOCK_THREADS=32, VEC_BYTES=8, FAST_EXP=2, LOAD_PATH=4),
             dict(BLOCK_THREADS=512, VEC_BYTES=16, FAST_EXP=2, LOAD_PATH=4),
             dict(BLOCK_THREADS=128, VEC_BYTES=4, FAST_EXP=0, LOAD_PATH=4, PDL=1)]
    checked = 0
    with LocalRunner(folder, settings=FAST) as runner:
        for shape in ("small", "odd", "decode"):
            env = folder.env(shape, dtype)
            space = folder.template.space(env)
            d = int(folder.shape_values(shape)["d"])
            configs = [c for c in (base.replace(D_CONST=d, **k) for k in knobs) if c in space]
            for r in runner.measure([Candidate(c, shape, dtype) for c in configs]):
                assert r.status is Status.OK, (shape, dict(r.config), r.reason)
                checked += 1
    assert checked >= 13


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
