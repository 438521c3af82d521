"""The hardware model: device descriptions (the table, live attributes, their comparison).

The checks of a launch or a compiled kernel against these limits, and the occupancy
arithmetic, live in :mod:`workbench.core.feasibility`.

Sources of the facts in :data:`DEVICES`:

* per-compute-capability limits (threads, warps and blocks per SM, registers, shared
  memory per SM / per block, the 1 KiB per-block reserve from 8.0 on): the CUDA C++
  Programming Guide, "Technical Specifications per Compute Capability" table;
* allocation granularities (registers allocated per warp in units of 256, warps placed in
  4 SM sub-partitions, shared memory allocated in units of 128 bytes on 8.x/9.x and 256
  bytes on 7.x): the CUDA Occupancy Calculator and the toolkit's ``cuda_occupancy.h``;
* per-product facts (SM count, L2 size, peak DRAM bandwidth): NVIDIA's product data
  sheets; they match what the CUDA driver reports (``L2_CACHE_SIZE``,
  ``MULTIPROCESSOR_COUNT``; bandwidth = 2 x memory clock x bus width).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from workbench.core.errors import DeviceError

KIB = 1024
MIB = 1024 * 1024


@dataclass(frozen=True)
class DeviceSpec:
    """What the workbench needs to know about one GPU model (limits per block and per SM)."""

    key: str  # table key, e.g. "h100_sxm"
    name: str  # marketing name, as the driver reports it where known
    arch: str  # nvcc -arch value, e.g. "sm_90a"
    compute_capability: tuple[int, int]
    num_sms: int
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    max_regs_per_thread: int
    max_regs_per_block: int
    reg_alloc_unit_size: int  # registers are allocated per warp, rounded up to this many
    warp_alloc_granularity: int  # warps are spread over this many SM sub-partitions
    smem_per_block_default_bytes: int  # without the opt-in attribute
    smem_per_block_optin_bytes: int  # with cudaFuncAttributeMaxDynamicSharedMemorySize
    smem_per_sm_bytes: int
    smem_alloc_unit_bytes: int
    reserved_smem_per_block_bytes: int  # taken by the driver from every block
    l2_bytes: int
    peak_mem_bandwidth_gb_per_s: float  # 1 GB = 1e9 B
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    source: str = ""  # where the numbers come from ("table" or "live attributes")
    notes: str = ""

    @property
    def max_warps_per_sm(self) -> int:
        """Resident warp slots per SM (``max_threads_per_sm / warp_size``)."""
        return self.max_threads_per_sm // self.warp_size


def _spec(**kwargs: object) -> DeviceSpec:
    """Fill the limits every architecture since Volta shares, then apply ``kwargs``."""
    common: dict[str, object] = {
        "warp_size": 32,
        "max_threads_per_block": 1024,
        "regs_per_sm": 65536,
        "max_regs_per_thread": 255,
        "max_regs_per_block": 65536,
        "reg_alloc_unit_size": 256,
        "warp_alloc_granularity": 4,
        "smem_per_block_default_bytes": 48 * KIB,
        "smem_alloc_unit_bytes": 128,
        "reserved_smem_per_block_bytes": 1 * KIB,
        "source": "table",
    }
    common.update(kwargs)
    return DeviceSpec(**common)  # type: ignore[arg-type]


_HOPPER: dict[str, object] = {
    "arch": "sm_90a",
    "compute_capability": (9, 0),
    "max_threads_per_sm": 2048,
    "max_blocks_per_sm": 32,
    "smem_per_block_optin_bytes": 227 * KIB,
    "smem_per_sm_bytes": 228 * KIB,
}
_ADA: dict[str, object] = {
    "arch": "sm_89",
    "compute_capability": (8, 9),
    "max_threads_per_sm": 1536,
    "max_blocks_per_sm": 24,
    "smem_per_block_optin_bytes": 99 * KIB,
    "smem_per_sm_bytes": 100 * KIB,
}

DEVICES: Mapping[str, DeviceSpec] = {
    "h100_sxm": _spec(
        key="h100_sxm", name="NVIDIA H100 80GB HBM3", num_sms=132, l2_bytes=50 * MIB,
        peak_mem_bandwidth_gb_per_s=3352.0, notes="SXM5, 80 GB HBM3", **_HOPPER),
    # L2: 60 MiB as the driver reports it on the lent H200s (L2_CACHE_SIZE = 62914560);
    # the H100 SXM5's is 50 MiB
    "h200": _spec(
        key="h200", name="NVIDIA H200", num_sms=132, l2_bytes=60 * MIB,
        peak_mem_bandwidth_gb_per_s=4800.0, notes="SXM, 141 GB HBM3e", **_HOPPER),
    "a100": _spec(
        key="a100", name="NVIDIA A100-SXM4-80GB", arch="sm_80", compute_capability=(8, 0),
        num_sms=108, max_threads_per_sm=2048, max_blocks_per_sm=32,
        smem_per_block_optin_bytes=163 * KIB, smem_per_sm_bytes=164 * KIB,
        l2_bytes=40 * MIB, peak_mem_bandwidth_gb_per_s=2039.0, notes="SXM4, 80 GB HBM2e"),
    "l4": _spec(
        key="l4", name="NVIDIA L4", num_sms=58, l2_bytes=48 * MIB,
        peak_mem_bandwidth_gb_per_s=300.0, notes="24 GB GDDR6", **_ADA),
    "rtx4090": _spec(
        key="rtx4090", name="NVIDIA GeForce RTX 4090", num_sms=128, l2_bytes=72 * MIB,
        peak_mem_bandwidth_gb_per_s=1008.0, notes="24 GB GDDR6X", **_ADA),
    "titan_rtx": _spec(
        key="titan_rtx", name="NVIDIA TITAN RTX", arch="sm_75", compute_capability=(7, 5),
        num_sms=72, max_threads_per_sm=1024, max_blocks_per_sm=16,
        smem_per_block_optin_bytes=64 * KIB, smem_per_sm_bytes=64 * KIB,
        smem_alloc_unit_bytes=256, reserved_smem_per_block_bytes=0,
        l2_bytes=6 * MIB, peak_mem_bandwidth_gb_per_s=672.0, notes="24 GB GDDR6"),
}

_ALIASES: Mapping[str, str] = {
    "h100": "h100_sxm",
    "h100_sxm": "h100_sxm",
    "h100sxm": "h100_sxm",
    "h200": "h200",
    "a100": "a100",
    "l4": "l4",
    "4090": "rtx4090",
    "rtx4090": "rtx4090",
    "rtx_4090": "rtx4090",
    "titan_rtx": "titan_rtx",
    "titanrtx": "titan_rtx",
}


#: The device planned for when none is measured (no runner yet, a CPU-only machine): the one
#: default of the package. Everything that needs a default asks :func:`default_device`.
DEFAULT_DEVICE = "h100_sxm"


def default_device() -> DeviceSpec:
    """The :data:`DEFAULT_DEVICE` table entry."""
    return DEVICES[DEFAULT_DEVICE]


def get_device(key: str) -> DeviceSpec:
    """The table entry for ``key`` or one of its aliases (case-insensitive, ``-`` = ``_``)."""
    normalized = key.strip().lower().replace("-", "_").replace(" ", "_")
    table_key = _ALIASES.get(normalized, normalized)
    if table_key in DEVICES:
        return DEVICES[table_key]
    choices = sorted(set(DEVICES) | set(_ALIASES))
    raise DeviceError(
        f"unknown device {key!r}; choose one of: {', '.join(choices)}",
        key=key, choices=choices)


def device_env(spec: DeviceSpec) -> dict[str, int]:
    """The device limits visible to constraint and launch expressions (docs/design.md)."""
    return {
        "max_threads_per_block": spec.max_threads_per_block,
        "max_smem_per_block": spec.smem_per_block_default_bytes,
        "max_smem_per_block_optin": spec.smem_per_block_optin_bytes,
        "num_sms": spec.num_sms,
        "warp_size": spec.warp_size,
        "l2_bytes": spec.l2_bytes,
        "max_regs_per_thread": spec.max_regs_per_thread,
        # CTAs per thread-block cluster: the portable limit from sm_90 on; before it a
        # kernel cannot declare a cluster (nvcc refuses __cluster_dims__), so 1
        "max_cluster_size": 8 if spec.compute_capability >= (9, 0) else 1,
    }


# --- live devices -------------------------------------------------------------------

# DeviceSpec field <- CUDA device attribute (pycuda.driver.device_attribute names).
_LIVE_FIELDS: Mapping[str, str] = {
    "num_sms": "MULTIPROCESSOR_COUNT",
    "warp_size": "WARP_SIZE",
    "max_threads_per_block": "MAX_THREADS_PER_BLOCK",
    "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "max_blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "regs_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "max_regs_per_block": "MAX_REGISTERS_PER_BLOCK",
    "smem_per_block_default_bytes": "MAX_SHARED_MEMORY_PER_BLOCK",
    "smem_per_block_optin_bytes": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "smem_per_sm_bytes": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "l2_bytes": "L2_CACHE_SIZE",
}


def match_device_name(name: str) -> str | None:
    """The table key for a driver-reported device name, or None when none fits."""
    upper = name.upper()
    patterns = (
        (r"\bH100\b.*(SXM|HBM3)", "h100_sxm"),
        (r"\bH200\b", "h200"),
        (r"\bA100\b", "a100"),
        (r"\bL4\b", "l4"),
        (r"\b4090\b", "rtx4090"),
        (r"TITAN RTX", "titan_rtx"),
    )
    for pattern, key in patterns:
        if re.search(pattern, upper):
            return key
    return None


def from_live(attrs: Mapping[str, int], name: str) -> DeviceSpec:
    """Build a spec from CUDA device attributes (``pycuda.driver.device_attribute`` names).

    Granularities the driver does not report (register and shared memory allocation
    units, sub-partitions, registers per thread) follow the compute capability. The peak
    bandwidth is ``2 * MEMORY_CLOCK_RATE (kHz) * GLOBAL_MEMORY_BUS_WIDTH (bits) / 8``; when
    the driver does not report those, the matching table entry's value (or 0.0) is kept.
    """
    required = [*_LIVE_FIELDS.values(), "COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR"]
    missing = [attr for attr in required if attr not in attrs]
    if missing:
        raise DeviceError(f"device attributes missing for {name!r}: {', '.join(missing)}",
                          name=name, missing=missing)
    major, minor = int(attrs["COMPUTE_CAPABILITY_MAJOR"]), int(attrs["COMPUTE_CAPABILITY_MINOR"])
    table_key = match_device_name(name)
    table = DEVICES.get(table_key) if table_key else None
    values: dict[str, object] = {f: int(attrs[a]) for f, a in _LIVE_FIELDS.items()}

    clock_khz = attrs.get("MEMORY_CLOCK_RATE", 0)
    bus_bits = attrs.get("GLOBAL_MEMORY_BUS_WIDTH", 0)
    if clock_khz and bus_bits:
        bandwidth = round(2 * clock_khz * 1e3 * bus_bits / 8 / 1e9, 1)
    else:
        bandwidth = table.peak_mem_bandwidth_gb_per_s if table else 0.0
    default_reserve = 1 * KIB if major >= 8 else 0
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return DeviceSpec(
        key=table_key or slug,
        name=name,
        arch=f"sm_{major}{minor}" + ("a" if major == 9 else ""),
        compute_capability=(major, minor),
        max_regs_per_thread=255,
        reg_alloc_unit_size=256,
        warp_alloc_granularity=4,
        smem_alloc_unit_bytes=128 if major >= 8 else 256,
        reserved_smem_per_block_bytes=int(
            attrs.get("RESERVED_SHARED_MEMORY_PER_BLOCK", default_reserve)),
        peak_mem_bandwidth_gb_per_s=bandwidth,
        max_block_dims=(int(attrs.get("MAX_BLOCK_DIM_X", 1024)),
                        int(attrs.get("MAX_BLOCK_DIM_Y", 1024)),
                        int(attrs.get("MAX_BLOCK_DIM_Z", 64))),
        max_grid_dims=(int(attrs.get("MAX_GRID_DIM_X", 2**31 - 1)),
                       int(attrs.get("MAX_GRID_DIM_Y", 65535)),
                       int(attrs.get("MAX_GRID_DIM_Z", 65535))),
        source="live attributes",
        notes=f"matches table entry {table_key}" if table_key else "no table entry",
        **values,  # type: ignore[arg-type]
    )


BANDWIDTH_TOLERANCE = 0.005
_DESCRIPTIVE = frozenset({"key", "name", "source", "notes"})


@dataclass(frozen=True)
class TableDifference:
    """One fact where the live device and its table entry disagree (the live value wins)."""

    field: str
    live: object
    table: object

    def describe(self) -> str:
        """``l2_bytes: live 62914560 (60.0 MiB), table 52428800 (50.0 MiB)``."""
        def shown(value: object) -> str:
            if self.field.endswith("_bytes") and isinstance(value, int) and value >= MIB:
                return f"{value} ({value / MIB:.1f} MiB)"
            return repr(value)
        return f"{self.field}: live {shown(self.live)}, table {shown(self.table)}"


@dataclass(frozen=True)
class TableCheck:
    """A live device's facts against the table entry of the same model."""

    device_name: str
    table_key: str | None  # None: the table has no entry for this device
    differences: tuple[TableDifference, ...] = ()

    @property
    def matches(self) -> bool:
        return self.table_key is not None and not self.differences

    def lines(self) -> list[str]:
        """One line per difference, naming the device and the entry (empty: it matches)."""
        if self.table_key is None:
            return [f"device {self.device_name!r} has no table entry; its live attributes "
                    f"are used"]
        return [f"live {self.device_name} differs from table entry {self.table_key}: "
                f"{d.describe()}" for d in self.differences]


def _differences(a: DeviceSpec, b: DeviceSpec) -> list[TableDifference]:
    differences = []
    for f in fields(DeviceSpec):
        left, right = getattr(a, f.name), getattr(b, f.name)
        if f.name in _DESCRIPTIVE or left == right:
            continue
        if (isinstance(left, float) and isinstance(right, float)
                and abs(left - right) <= BANDWIDTH_TOLERANCE * max(abs(left), abs(right))):
            continue
        differences.append(TableDifference(f.name, left, right))
    return differences


def compare_specs(a: DeviceSpec, b: DeviceSpec) -> list[str]:
    """One line per field whose values differ (``"l2_bytes: 52428800 != 41943040"``).

    The descriptive fields (key, name, source, notes) are left out: the point is to log
    where a live GPU's limits differ from the table's. Bandwidths within
    :data:`BANDWIDTH_TOLERANCE` (relative) count as equal: data sheets round them.
    """
    return [f"{d.field}: {d.live!r} != {d.table!r}" for d in _differences(a, b)]


def check_against_table(live: DeviceSpec) -> TableCheck:
    """The live device's spec (:func:`from_live`) against the table entry its name matches:
    every differing fact with both values (:func:`compare_specs`' rules)."""
    key = match_device_name(live.name)
    table = DEVICES.get(key) if key is not None else None
    if key is None or table is None:
        return TableCheck(live.name, None)
    return TableCheck(live.name, key, tuple(_differences(live, table)))
