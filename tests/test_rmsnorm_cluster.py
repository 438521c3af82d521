"""fused_add_rmsnorm's CLUSTER knob (sm_90 thread-block clusters sharing a row): the space's
constraints and launch geometry (pure: no compiler, no GPU).

The kernel's contract, which only the GPU can run and these tests check on the CPU side:
grid = tokens * CLUSTER (a whole number of clusters), one row per cluster, each CTA holds
its ceil(vectors / CLUSTER) slice of the row in registers, so its threads times ITEMS must
cover the slice; CLUSTER = 1 is the template as it was before the knob (the committed
recording was carried over on that claim), so its space and launches must not move."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from workbench.core.hardware import device_env, get_device
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Config
from workbench.core.space import SearchSpace
from workbench.core.template import LaunchRules

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "sample_kernels" / "fused_add_rmsnorm"

#: few long rows (the shape where one CTA a row leaves most SMs idle), not in kernel.toml
LONG = {"tokens": 4, "hidden": 16384}

#: the launch rules and constraints as they were before CLUSTER (main before the knob)
OLD_GRID = ["ceil_div(tokens, ROWS_PER_BLOCK)"]
OLD_BLOCK = ["min(BLOCK_THREADS, ROWS_PER_BLOCK * 32 * "
             "ceil_div(hidden // (VEC_BYTES // elem_bytes), 32))"]
OLD_SMEM = "4 * ROWS_PER_BLOCK * (32 + hidden * (1 - ROW_IN_REGS))"
OLD_CONSTRAINTS = [
    "VEC_BYTES >= elem_bytes",
    "hidden % (VEC_BYTES // elem_bytes) == 0",
    "BLOCK_THREADS >= 32 * ROWS_PER_BLOCK",
    "4 * ROWS_PER_BLOCK * (32 + hidden * (1 - ROW_IN_REGS)) <= max_smem_per_block_optin",
    "ROW_IN_REGS == 0 or hidden <= (BLOCK_THREADS // ROWS_PER_BLOCK) * "
    "(VEC_BYTES // elem_bytes) * ITEMS",
    "ROW_IN_REGS == 0 or ITEMS == 1 or hidden > (BLOCK_THREADS // ROWS_PER_BLOCK) * "
    "(VEC_BYTES // elem_bytes) * (ITEMS // 2)",
    "HIDDEN_CONST == 0 or HIDDEN_CONST == hidden",
]


@pytest.fixture(scope="module")
def folder() -> KernelFolder:
    return load_kernel_folder(FOLDER)


def _env(folder: KernelFolder, shape: str, dtype: str, device: str = "h100") -> dict[str, Any]:
    if shape == "long":
        return {**folder.env("decode", dtype, get_device(device)), **LONG}
    return folder.env(shape, dtype, get_device(device))


def _cases(folder: KernelFolder) -> list[tuple[str, str]]:
    return [(s, d) for s in (*folder.shapes, "long") for d in folder.dtypes]


def test_cluster_is_a_choice_of_portable_sizes_defaulting_to_one(folder: KernelFolder) -> None:
    [param] = [p for p in folder.template.params if p.name == "CLUSTER"]
    assert param.to_dict()["kind"] == "choice"
    assert list(param.values()) == [1, 2, 4, 8] and param.default == 1


def test_every_feasible_cluster_config_launches_whole_clusters_covering_the_row(
        folder: KernelFolder) -> None:
    seen = 0
    for shape, dtype in _cases(folder):
        env = _env(folder, shape, dtype)
        for cfg in folder.template.space(env):
            cluster = int(cfg["CLUSTER"])
            if cluster == 1:
                continue
            seen += 1
            launch = folder.template.launch_for(cfg, env)
            vectors = env["hidden"] // (int(cfg["VEC_BYTES"]) // env["elem_bytes"])
            slice_vectors = math.ceil(vectors / cluster)
            threads = launch.block[0]
            assert launch.grid == (env["tokens"] * cluster, 1, 1), (shape, dtype, cfg)
            assert launch.block[1:] == (1, 1) and threads % 32 == 0, cfg
            assert 32 <= threads <= min(int(cfg["BLOCK_THREADS"]), 1024), cfg
            assert threads * int(cfg["ITEMS"]) >= slice_vectors, (shape, dtype, cfg)
            assert (cluster - 1) * slice_vectors < vectors, cfg  # no CTA without a vector
            assert int(cfg["ROWS_PER_BLOCK"]) == 1 and int(cfg["ROW_IN_REGS"]) == 1, cfg
            assert launch.smem_bytes == 4 * 32, cfg  # the warp partials only: no smem row
    assert seen > 1000  # the knob opens real configs at every shape, not a handful


@pytest.mark.parametrize("shape", ["long", "decode", "small"])
def test_cluster_splits_the_long_row_over_more_ctas(folder: KernelFolder, shape: str) -> None:
    env = _env(folder, shape, "bf16")
    base = folder.template.default_config().replace(ROW_IN_REGS=1)
    space = folder.template.space(env)
    one = folder.template.launch_for(base, env)
    for cluster in (2, 4, 8):
        cfg = base.replace(CLUSTER=cluster)
        assert space.rejection(cfg) is None, (shape, cluster)
        launch = folder.template.launch_for(cfg, env)
        assert launch.grid[0] == cluster * one.grid[0] == cluster * env["tokens"]
        assert launch.block[0] == 32 * math.ceil(math.ceil(env["hidden"] // 8 / cluster) / 32)
    if shape == "long":  # 4 rows: 4 CTAs of 1024 threads become 32 CTAs of 256
        long8 = folder.template.launch_for(base.replace(CLUSTER=8), env)
        assert (one.grid[0], one.block[0], long8.grid[0], long8.block[0]) == (4, 1024, 32, 256)


@pytest.mark.parametrize(("change", "constraint"), [
    ({"ROWS_PER_BLOCK": 2},  # 512 threads a row: its 512-vector slice fits
     "CLUSTER == 1 or (ROWS_PER_BLOCK == 1 and ROW_IN_REGS == 1)"),
    ({"ROW_IN_REGS": 0}, "CLUSTER == 1 or (ROWS_PER_BLOCK == 1 and ROW_IN_REGS == 1)"),
])
def test_a_cluster_needs_one_row_per_cta_in_registers(
        folder: KernelFolder, change: dict[str, int], constraint: str) -> None:
    env = _env(folder, "long", "bf16")
    cfg = folder.template.default_config().replace(**{"CLUSTER": 4, "ROW_IN_REGS": 1, **change})
    assert folder.template.space(env).rejection(cfg) == constraint


def test_a_slice_larger_than_the_threads_can_hold_is_rejected(folder: KernelFolder) -> None:
    # long, bf16, 16-byte vectors: 2048 vectors, 512 a CTA at CLUSTER 4; 256 threads x 1 item
    env = _env(folder, "long", "bf16")
    base = folder.template.default_config().replace(ROW_IN_REGS=1, CLUSTER=4, BLOCK_THREADS=256)
    space = folder.template.space(env)
    assert space.rejection(base) is not None and "ceil_div" in str(space.rejection(base))
    assert space.rejection(base.replace(ITEMS=2)) is None
    assert space.rejection(base.replace(ITEMS=4)) is not None  # 2 already fits: idle registers


def test_a_cluster_with_an_idle_cta_is_rejected(folder: KernelFolder) -> None:
    # hidden 48 in 16-byte bf16 vectors: 6 vectors; 8 CTAs of 1 would leave 2 CTAs idle
    env = {**_env(folder, "small", "bf16"), "hidden": 48}
    cfg = folder.template.default_config().replace(ROW_IN_REGS=1, CLUSTER=8, BLOCK_THREADS=32)
    rejection = folder.template.space(env).rejection(cfg)
    assert rejection is not None and "(CLUSTER - 1)" in rejection
    assert folder.template.space(env).rejection(cfg.replace(CLUSTER=2)) is None


def test_clusters_are_rejected_before_sm90(folder: KernelFolder) -> None:
    cfg = folder.template.default_config().replace(ROW_IN_REGS=1, CLUSTER=2)
    assert folder.template.space(_env(folder, "long", "bf16")).rejection(cfg) is None
    a100 = folder.template.space(_env(folder, "long", "bf16", "a100"))
    assert device_env(get_device("a100"))["max_cluster_size"] == 1
    assert a100.rejection(cfg) == "CLUSTER <= max_cluster_size"
    assert all(int(c["CLUSTER"]) == 1 for c in a100)


@pytest.mark.parametrize(("shape", "dtype"), [("small", "bf16"), ("odd", "fp16"),
                                              ("decode", "bf16"), ("prefill", "fp16"),
                                              ("large", "bf16"), ("long", "fp16")])
def test_cluster_one_keeps_the_space_and_launches_of_the_template_before_the_knob(
        folder: KernelFolder, shape: str, dtype: str) -> None:
    env = _env(folder, shape, dtype)
    new_space = folder.template.space(env)
    old_params = [p for p in new_space.params if p.name != "CLUSTER"]
    old_space = SearchSpace(old_params, OLD_CONSTRAINTS, env)
    new_at_one = [Config({k: v for k, v in c.items() if k != "CLUSTER"})
                  for c in new_space if int(c["CLUSTER"]) == 1]
    assert new_at_one == list(old_space)
    old_rules = LaunchRules.parse(OLD_GRID, OLD_BLOCK, OLD_SMEM)
    for cfg in old_space:
        new = folder.template.launch_for(cfg.replace(CLUSTER=1), env)
        assert new == old_rules.evaluate({**env, **cfg}), cfg
