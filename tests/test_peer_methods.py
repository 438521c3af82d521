"""benchmarks/peers/peer_methods.py, the pure parts: verdicts per method, configs moved to shapes
nobody tuned for, and the pick over methods (pure tier; the timing runs on the GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config
from workbench.engine.recording import load_recording

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))

from peer_methods import (  # noqa: E402
    UNSEEN,
    pick_over_methods,
    specialised_template,
    transfer_candidates,
    verdicts,
    with_unseen,
)

pytestmark = pytest.mark.timeout(120)


def test_verdicts_flag_a_row_whose_winner_changes_with_the_method() -> None:
    impls = {"workbench best": {"median_us": 4.0, "do_bench_us": 5.0, "graph_us": 2.0},
             "flashinfer": {"median_us": 4.2, "do_bench_us": 4.8, "graph_us": 1.5},
             "liger": {"median_us": 4.5, "do_bench_us": 6.0}}
    v = verdicts(impls, ["flashinfer", "liger"])
    assert v["harness"]["best_peer"] == "flashinfer" and v["harness"]["ratio"] < 1
    assert v["graph"]["ratio"] == pytest.approx(2.0 / 1.5)
    assert v["disagree"]
    same = verdicts({"workbench best": {"median_us": 4.0, "graph_us": 1.0},
                     "flashinfer": {"median_us": 4.2, "graph_us": 1.5}}, ["flashinfer"])
    assert not same["disagree"] and "do_bench" not in same


def test_unseen_shapes_get_specialised_in_space_configs_never_the_kernel_toml() -> None:
    for name in UNSEEN:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        assert not set(UNSEEN[name]) & set(folder.shapes)  # kept out of kernel.toml
    folder = with_unseen(load_kernel_folder(ROOT / "sample_kernels" / "fused_add_rmsnorm"))
    recording = load_recording(sorted((folder.path / "recordings").glob("*.json"))[-1])
    template = specialised_template(folder.template, folder.shapes["u_odd"])
    configs = transfer_candidates(folder, template, recording, "u_odd", "bf16")
    space = template.space(folder.env("u_odd", "bf16"))
    assert configs and all(space.rejection(c) is None for c in configs)
    assert {c["HIDDEN_CONST"] for c in configs} <= {0, 2888}
    assert any(c["HIDDEN_CONST"] == 2888 for c in configs)


def test_widened_values_reach_past_the_curated_range() -> None:
    folder = with_unseen(load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul"))
    recording = load_recording(sorted((folder.path / "recordings").glob("*.json"))[-1])
    template = specialised_template(folder.template, folder.shapes["u_long_row"])
    configs = transfer_candidates(folder, template, recording, "u_long_row", "bf16")
    assert max(int(c["ROW_SPLIT"]) for c in configs) > 8


def test_pick_over_methods_uses_the_declared_rule() -> None:
    base = {"median_us": 5.0, "do_bench_us": 8.0, "graph_us": 3.0}
    fast_cold = {"config": {"X": 1}, "median_us": 4.0, "do_bench_us": 8.4, "graph_us": 2.8}
    steady = {"config": {"X": 2}, "median_us": 4.5, "do_bench_us": 7.5, "graph_us": 2.9}
    chosen, info = pick_over_methods([fast_cold, steady], base)
    assert Config(chosen["config"]) == Config(X=2) and info["holds"]
    assert info["ratios"][0]["write"] == pytest.approx(8.4 / 8.0)
