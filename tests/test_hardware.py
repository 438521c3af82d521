"""The hardware model: device table, live specs; and the feasibility arithmetic it feeds
(occupancy, launch limits: workbench.core.feasibility)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.errors import DeviceError, WorkbenchError
from workbench.core.feasibility import launch_rejection, occupancy
from workbench.core.hardware import (
    DEVICES,
    DeviceSpec,
    compare_specs,
    device_env,
    from_live,
    get_device,
    match_device_name,
)
from workbench.core.records import ResourceUsage

H100 = DEVICES["h100_sxm"]
KIB = 1024


# --- the table ------------------------------------------------------------------------

@pytest.mark.parametrize(("alias", "key"), [
    ("h100", "h100_sxm"), ("H100", "h100_sxm"), ("h100_sxm", "h100_sxm"), ("H100-SXM", "h100_sxm"),
    ("h200", "h200"), ("a100", "a100"), ("l4", "l4"), ("4090", "rtx4090"),
    ("titan_rtx", "titan_rtx"),
])
def test_get_device_aliases(alias: str, key: str) -> None:
    assert get_device(alias).key == key


def test_get_device_unknown_lists_choices() -> None:
    with pytest.raises(DeviceError) as caught:
        get_device("v100")
    assert isinstance(caught.value, WorkbenchError)
    assert "h100_sxm" in str(caught.value) and "titan_rtx" in str(caught.value)
    assert caught.value.details["key"] == "v100"
    assert set(DEVICES) <= set(caught.value.details["choices"])


@pytest.mark.parametrize("spec", list(DEVICES.values()), ids=list(DEVICES))
def test_table_entries_are_self_consistent(spec: DeviceSpec) -> None:
    assert spec.max_warps_per_sm * spec.warp_size == spec.max_threads_per_sm
    # one block at the opt-in maximum (plus the driver reserve) fits on one SM
    assert spec.smem_per_block_optin_bytes + spec.reserved_smem_per_block_bytes \
        <= spec.smem_per_sm_bytes
    assert spec.smem_per_block_default_bytes <= spec.smem_per_block_optin_bytes
    assert spec.arch == "sm_{}{}".format(*spec.compute_capability) + (
        "a" if spec.compute_capability == (9, 0) else "")
    assert spec.source == "table"


def test_table_facts_from_the_programming_guide() -> None:
    h100, a100, l4, titan = (get_device(k) for k in ("h100", "a100", "l4", "titan_rtx"))
    assert (h100.num_sms, h100.l2_bytes, h100.smem_per_block_optin_bytes) == (
        132, 50 * 1024 * KIB, 227 * KIB)
    assert (h100.max_warps_per_sm, h100.max_blocks_per_sm) == (64, 32)
    assert (a100.smem_per_block_optin_bytes, a100.smem_per_sm_bytes) == (163 * KIB, 164 * KIB)
    assert (l4.max_warps_per_sm, l4.max_blocks_per_sm, l4.arch) == (48, 24, "sm_89")
    assert (titan.max_warps_per_sm, titan.reserved_smem_per_block_bytes) == (32, 0)
    assert get_device("h200").peak_mem_bandwidth_gb_per_s > h100.peak_mem_bandwidth_gb_per_s


def test_device_env_names_match_the_design() -> None:
    env = device_env(H100)
    assert env == {
        "max_threads_per_block": 1024, "max_smem_per_block": 48 * KIB,
        "max_smem_per_block_optin": 227 * KIB, "num_sms": 132, "warp_size": 32,
        "l2_bytes": 50 * 1024 * KIB, "max_regs_per_thread": 255, "max_cluster_size": 8}
    assert device_env(get_device("a100"))["max_cluster_size"] == 1  # no clusters before sm_90


# --- occupancy --------------------------------------------------------------------------

def test_occupancy_full_when_warps_limit() -> None:
    # 256 threads x 32 regs: warps allow 8 blocks, registers also exactly 8 (a tie:
    # LIMIT_PRIORITY reports warps)
    occ = occupancy(H100, ResourceUsage(regs_per_thread=32), 256)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (8, 64, "warps")
    assert occ.fraction == 1.0


def test_occupancy_register_limit() -> None:
    occ = occupancy(H100, ResourceUsage(regs_per_thread=255), 256)
    # 255 regs -> 256 per thread -> 8192 per warp -> 8 warps per SM -> one 8-warp block
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (1, 8, "registers")


def test_occupancy_registers_fill_sub_partitions() -> None:
    # 200 regs -> 6400 per warp; each of 4 sub-partitions (16384 regs) holds 2 warps, so 8
    # warps per SM (not floor(65536 / 6400) = 10): 4 blocks of 2 warps, not 5.
    occ = occupancy(H100, ResourceUsage(regs_per_thread=200), 64)
    assert (occ.blocks_per_sm, occ.limited_by) == (4, "registers")


def test_occupancy_shared_memory_limit() -> None:
    usage = ResourceUsage(regs_per_thread=32, dynamic_smem_bytes=100 * KIB)
    occ = occupancy(H100, usage, 128)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (2, 8, "shared_memory")


def test_occupancy_counts_reserve_and_allocation_unit() -> None:
    # 45666 B + 1 KiB reserve = 46690 B: five would fit in 228 KiB (233450 B), but the
    # 128 B allocation unit makes each 46720 B, so only four fit.
    occ = occupancy(H100, ResourceUsage(regs_per_thread=16, dynamic_smem_bytes=45666), 64)
    assert (occ.blocks_per_sm, occ.limited_by) == (4, "shared_memory")
    # without the reserve and rounding this size would give five:
    assert H100.smem_per_sm_bytes // 45666 == 5


def test_occupancy_block_count_limit() -> None:
    occ = occupancy(H100, ResourceUsage(regs_per_thread=16), 32)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (32, 32, "blocks")


def test_occupancy_rounds_threads_up_to_warps() -> None:
    # 80 threads occupy 3 warps: 64 // 3 = 21 blocks (counting threads would give 2048 // 80 = 25)
    occ = occupancy(H100, ResourceUsage(regs_per_thread=16), 80)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (21, 63, "warps")


@pytest.mark.parametrize(("usage", "threads", "why"), [
    (ResourceUsage(regs_per_thread=32), 2048, "threads"),
    (ResourceUsage(regs_per_thread=32), 0, "threads"),
    (ResourceUsage(regs_per_thread=255), 1024, "registers"),  # 262144 regs > 65536 per block
    (ResourceUsage(regs_per_thread=32, dynamic_smem_bytes=228 * KIB), 128, "shared_memory"),
])
def test_occupancy_zero_when_a_block_cannot_fit(usage: ResourceUsage, threads: int,
                                                why: str) -> None:
    occ = occupancy(H100, usage, threads)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limited_by) == (0, 0, why)


def test_occupancy_allows_the_optin_maximum() -> None:
    usage = ResourceUsage(regs_per_thread=32, dynamic_smem_bytes=227 * KIB)
    occ = occupancy(H100, usage, 128)
    assert (occ.blocks_per_sm, occ.limited_by) == (1, "shared_memory")


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(DEVICES)), regs=st.integers(0, 255),
       threads=st.integers(1, 1024), smem=st.integers(0, 227 * KIB))
def test_occupancy_never_oversubscribes_an_sm(key: str, regs: int, threads: int,
                                              smem: int) -> None:
    spec = DEVICES[key]
    occ = occupancy(spec, ResourceUsage(regs_per_thread=regs, dynamic_smem_bytes=smem), threads)
    warps = -(-threads // 32)
    assert occ.warps_per_sm == occ.blocks_per_sm * warps
    assert occ.warps_per_sm <= spec.max_warps_per_sm
    assert occ.blocks_per_sm <= spec.max_blocks_per_sm
    assert occ.blocks_per_sm * (smem + spec.reserved_smem_per_block_bytes) <= spec.smem_per_sm_bytes
    assert occ.warps_per_sm * regs * 32 <= spec.regs_per_sm
    # one more register per thread never raises occupancy
    if regs < 255:
        more = occupancy(spec, ResourceUsage(regs_per_thread=regs + 1, dynamic_smem_bytes=smem),
                         threads)
        assert more.blocks_per_sm <= occ.blocks_per_sm


# --- launch limits --------------------------------------------------------------------

def launch_problem(spec: DeviceSpec, grid: object, block: object, smem: int,
                   static_smem_bytes: int = 0) -> str | None:
    """The rejection's sentence (the typed fields are tested in test_feasibility.py)."""
    refused = launch_rejection(spec, grid, block, smem,  # type: ignore[arg-type]
                               static_smem_bytes=static_smem_bytes)
    return None if refused is None else refused.reason


@pytest.mark.parametrize(("grid", "block", "smem", "expected"), [
    ((132,), (256,), 0, None),
    ((1,), (1024,), 227 * KIB, None),
    ((2**31 - 1, 65535, 65535), (32, 32, 1), 0, None),
    ((1,), (2048,), 0, "block of 2048 threads exceeds max_threads_per_block=1024"),
    ((1,), (32, 8, 8), 0, "block of 2048 threads exceeds max_threads_per_block=1024"),
    ((1,), (1, 1, 65), 0, "block dimension z=65 exceeds its limit of 64"),
    ((1, 65536), (32,), 0, "grid dimension y=65536 exceeds its limit of 65535"),
    ((2**31,), (32,), 0, "grid dimension x=2147483648 exceeds its limit of 2147483647"),
    ((0,), (32,), 0, "grid dimension x is 0; every dimension must be >= 1"),
    ((4,), (32, 0), 0, "block dimension y is 0; every dimension must be >= 1"),
    ((1,), (128,), 227 * KIB + 1,
     "dynamic shared memory of 232449 bytes exceeds smem_per_block_optin_bytes=232448"),
    ((1,), (128,), -1, "dynamic shared memory of -1 bytes is negative"),
])
def test_launch_problem(grid: tuple[int, ...], block: tuple[int, ...], smem: int,
                        expected: str | None) -> None:
    assert launch_problem(H100, grid, block, smem) == expected


def test_launch_problem_counts_static_shared_memory() -> None:
    reason = launch_problem(H100, [1], [128], 200 * KIB, static_smem_bytes=30 * KIB)
    assert reason is not None and "30720 static + 204800 dynamic" in reason
    assert launch_problem(H100, [1], [128], 190 * KIB, static_smem_bytes=30 * KIB) is None


def test_launch_problem_uses_the_device() -> None:
    titan = get_device("titan_rtx")
    assert launch_problem(titan, 1, 128, 64 * KIB) is None
    assert launch_problem(titan, 1, 128, 64 * KIB + 1) is not None
    with pytest.raises(WorkbenchError):
        launch_problem(titan, (1, 1, 1, 1), 128, 0)


# --- live specs ----------------------------------------------------------------------

def _h100_attributes() -> dict[str, int]:
    """Attribute values the CUDA driver reports for an H100 SXM5 80GB (deviceQuery)."""
    return {
        "MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32, "MAX_THREADS_PER_BLOCK": 1024,
        "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
        "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MAX_REGISTERS_PER_BLOCK": 65536,
        "MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472, "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024,
        "L2_CACHE_SIZE": 52428800, "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
        "MEMORY_CLOCK_RATE": 2619000, "GLOBAL_MEMORY_BUS_WIDTH": 5120,
        "MAX_BLOCK_DIM_X": 1024, "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64,
        "MAX_GRID_DIM_X": 2147483647, "MAX_GRID_DIM_Y": 65535, "MAX_GRID_DIM_Z": 65535,
    }


def test_from_live_matches_the_table_for_h100() -> None:
    live = from_live(_h100_attributes(), "NVIDIA H100 80GB HBM3")
    assert live.key == "h100_sxm" and live.arch == "sm_90a" and live.source == "live attributes"
    assert live.peak_mem_bandwidth_gb_per_s == pytest.approx(3352.3, abs=0.05)
    assert compare_specs(live, H100) == []


def test_compare_specs_lists_differences() -> None:
    attrs = dict(_h100_attributes(), MULTIPROCESSOR_COUNT=114, L2_CACHE_SIZE=50331648,
                 MEMORY_CLOCK_RATE=1593000)
    live = from_live(attrs, "NVIDIA H100 PCIe")
    assert live.key == "nvidia_h100_pcie"  # no table entry for the PCIe card
    diffs = compare_specs(live, H100)
    assert diffs == ["num_sms: 114 != 132", "l2_bytes: 50331648 != 52428800",
                     "peak_mem_bandwidth_gb_per_s: 2039.0 != 3352.0"]


def test_from_live_requires_the_core_attributes() -> None:
    attrs = _h100_attributes()
    del attrs["L2_CACHE_SIZE"], attrs["WARP_SIZE"]
    with pytest.raises(DeviceError) as caught:
        from_live(attrs, "NVIDIA H100 80GB HBM3")
    assert caught.value.details["missing"] == ["WARP_SIZE", "L2_CACHE_SIZE"]


@pytest.mark.parametrize(("name", "key"), [
    ("NVIDIA H100 80GB HBM3", "h100_sxm"), ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA L4", "l4"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA TITAN RTX", "titan_rtx"),
    ("NVIDIA H100 PCIe", None), ("NVIDIA L40S", None),
])
def test_match_device_name(name: str, key: str | None) -> None:
    assert match_device_name(name) == key
