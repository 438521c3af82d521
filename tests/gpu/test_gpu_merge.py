"""GPU tier: the merge_attn_states_lse template's latency knobs (PDL, programmatic dependent
launch, released at the end or right after the wait; LEAN, the trimmed 2-D path) compiled,
verified against the reference on both input sets (every dtype; rows that end inside a
block, so LEAN's clamped loads are exercised) and timed, plain and in a CUDA graph, at the
named shapes and at a small-heads and a long-row size that are in no kernel.toml (added to
the folder in memory only). Run on the GPU machine: ``pytest -m gpu``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Candidate, Config, Status
from workbench.engine.bench import BenchSettings
from workbench.engine.runner import LocalRunner

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
FAST = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=200, max_time_s=0.05, timeout_s=10.0)
#: sizes like peer_methods.UNSEEN's u_small_heads and u_long_row, kept out of kernel.toml
EXTRA = {"t_small_heads": {"tokens": 613, "heads": 4, "head_dim": 64},
         "t_long_row": {"tokens": 16, "heads": 16, "head_dim": 256}}


def _folder() -> KernelFolder:
    folder = load_kernel_folder(ROOT / "sample_kernels" / "merge_attn_states_lse")
    return dataclasses.replace(folder, shapes={**folder.shapes, **EXTRA})


def _configs(folder: KernelFolder, shape: str) -> list[Config]:
    """PDL 1 in the flattened layout and in the 2-D layouts the searches pick, LEAN 1 with
    PDL 0, 1 and 2 (4 items of 2 rows: the last block's clamped rows at 'small')."""
    base = folder.template.default_config()
    head_dim = folder.shape_values(shape)["head_dim"]
    two_d = base.replace(ROWS_PER_BLOCK=8, VEC_BYTES=8, FAST_EXP=1)
    return [base.replace(PDL=1),
            two_d.replace(PDL=1),
            two_d.replace(PDL=1, LEAN=1),
            two_d.replace(PDL=2, LEAN=1),
            two_d.replace(LEAN=1, ROWS_PER_BLOCK=2, ITEMS=4, VEC_BYTES=4),
            base.replace(PDL=1, LEAN=1, ROWS_PER_BLOCK=4, VEC_BYTES=16, FAST_EXP=1, ITEMS=2,
                         HEAD_DIM_CONST=head_dim)]


@pytest.mark.timeout(600)
def test_merge_pdl_and_lean_configs_are_verified_and_timed_plain_and_in_a_graph() -> None:
    folder = _folder()
    shapes = ("small", "decode", *EXTRA)
    with LocalRunner(folder, settings=FAST) as runner:
        for dtype in ("bf16", "fp16", "fp32"):
            cands = [Candidate(c, s, dtype) for s in shapes for c in _configs(folder, s)]
            results = list(runner.measure(cands))  # in any order: paired by config and shape
            assert {(r.config.key(), r.shape) for r in results} == \
                {(c.config.key(), c.shape) for c in cands}
            for r in results:
                assert r.status is Status.OK, (dict(r.config), r.shape, dtype, r.reason)
                assert r.extra["launch"].get("pdl", False) is (r.config["PDL"] >= 1)
        graph = [Candidate(c, s, "bf16") for s in ("decode", "t_small_heads")
                 for c in _configs(folder, s)]
        results = list(runner.measure(graph, condition="graph"))
        assert len(results) == len(graph)
        for r in results:
            assert r.status is Status.OK, (dict(r.config), r.shape, r.reason)
            assert r.timing is not None and r.timing.median_us > 0
