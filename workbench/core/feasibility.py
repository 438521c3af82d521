"""Feasibility, in one home: can this launch run on this device, and how full is an SM?

Every check of a candidate against the hardware lives here, so pruning, the runners (GPU,
Dask, synthetic), range edits, template validation and ``workbench check`` refuse the
same configs for the same reasons (Triton's ``OutOfResources`` carries required vs limit
from one place):

* launch limits: threads per block, each block and grid dimension, dynamic + static
  shared memory per block against the opt-in maximum (:func:`launch_rejection`);
* the template's launch rules evaluated for (config, environment) by the one evaluator,
  :meth:`~workbench.core.template.LaunchRules.evaluate_config` (:func:`config_rejection`),
  or for many configs at once (:func:`config_rejections`: each rule evaluated once over
  arrays of the configs' values, the same verdicts and texts);
* resources once ptxas has reported a :class:`ResourceUsage`: shared memory, registers,
  no resident block, an occupancy floor, spills (:func:`resource_rejection`);
* the occupancy arithmetic itself (:func:`occupancy`).

A refusal is a :class:`Rejection` naming the ``limit``, the ``value`` the candidate asked
for and what is ``allowed``, with a sentence for humans. Pure arithmetic: no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.errors import ExpressionError, TemplateError, WorkbenchError
from workbench.core.hardware import DeviceSpec
from workbench.core.records import Occupancy, ResourceUsage, Value
from workbench.core.template import Launch, LaunchRules

#: Dynamic shared memory above this needs the opt-in attribute before a launch
#: (``cudaFuncAttributeMaxDynamicSharedMemorySize``); the same on every device since 7.0.
SMEM_WITHOUT_OPTIN_BYTES = 48 * 1024

#: Which check refused: ``launch`` before compiling, ``resources`` from ptxas's report.
STAGES: tuple[str, ...] = ("launch", "resources")


@dataclass(frozen=True)
class Rejection:
    """Why a candidate cannot run (or is not worth running) on a device.

    ``limit`` names the limit (``max_threads_per_block``, ``max_block_dim_y``,
    ``max_grid_dim_x``, ``min_dimension``, ``smem_per_block_optin_bytes``,
    ``min_dynamic_smem_bytes``, ``launch_rules``, ``registers``, ``warps``, ``blocks``,
    ``threads``, ``shared_memory``, ``min_occupancy``, ``spills``); ``value`` is what the
    candidate asked for and ``allowed`` the limit's value (a number where there is one);
    ``reason`` a sentence; ``stage`` one of :data:`STAGES`."""

    limit: str
    value: int | float | str
    allowed: int | float | str
    reason: str
    stage: str = "launch"

    def __str__(self) -> str:
        return self.reason


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit if unit > 0 else value


# When several resources allow the same number of blocks, the first in this order is
# reported: the warp slots are the SM's nominal capacity, so a kernel that fills them is
# "limited by warps" even if its registers would also just fit.
LIMIT_PRIORITY: tuple[str, ...] = ("warps", "blocks", "registers", "shared_memory")


def occupancy(spec: DeviceSpec, usage: ResourceUsage, threads_per_block: int) -> Occupancy:
    """Resident blocks and warps per SM, following the CUDA occupancy calculator.

    * warps per block = ceil(threads / warp_size);
    * registers: per warp, ``regs_per_thread * warp_size`` rounded up to
      ``reg_alloc_unit_size``; the SM's registers are split over ``warp_alloc_granularity``
      sub-partitions, so resident warps = granularity * floor(regs_per_sm / granularity /
      regs_per_warp); blocks = floor(warps / warps_per_block);
    * shared memory: static + dynamic + the per-block driver reserve, rounded up to
      ``smem_alloc_unit_bytes``; blocks = floor(smem_per_sm / that);
    * warps: floor(max_warps_per_sm / warps_per_block); blocks: ``max_blocks_per_sm``.

    A block that cannot run at all gives zero blocks with ``limited_by`` naming the
    resource it exceeds; ties between limits follow :data:`LIMIT_PRIORITY`.
    """
    max_warps = spec.max_warps_per_sm
    if threads_per_block < 1 or threads_per_block > spec.max_threads_per_block:
        return Occupancy(0, 0, max_warps, "threads")
    warps_per_block = -(-threads_per_block // spec.warp_size)

    regs_per_warp = _round_up(usage.regs_per_thread * spec.warp_size, spec.reg_alloc_unit_size)
    smem_per_block = _round_up(
        usage.smem_bytes_per_block + spec.reserved_smem_per_block_bytes,
        spec.smem_alloc_unit_bytes)
    smem_block_limit = spec.smem_per_block_optin_bytes + spec.reserved_smem_per_block_bytes
    # The hardware checks a block's registers as if its warps filled every sub-partition.
    regs_checked = regs_per_warp * _round_up(warps_per_block, spec.warp_alloc_granularity)
    if (usage.regs_per_thread > spec.max_regs_per_thread
            or regs_checked > spec.max_regs_per_block):
        return Occupancy(0, 0, max_warps, "registers")
    if smem_per_block > smem_block_limit:
        return Occupancy(0, 0, max_warps, "shared_memory")

    limits: dict[str, int] = {
        "warps": max_warps // warps_per_block,
        "blocks": spec.max_blocks_per_sm,
    }
    if regs_per_warp > 0:
        partitions = spec.warp_alloc_granularity
        warps_by_regs = partitions * ((spec.regs_per_sm // partitions) // regs_per_warp)
        limits["registers"] = warps_by_regs // warps_per_block
    if smem_per_block > 0:
        limits["shared_memory"] = spec.smem_per_sm_bytes // smem_per_block
    blocks = min(limits.values())
    limited_by = next(name for name in LIMIT_PRIORITY if limits.get(name) == blocks)
    return Occupancy(blocks, blocks * warps_per_block, max_warps, limited_by)


def _dims(values: Sequence[int] | int, what: str) -> tuple[int, int, int]:
    items = [values] if isinstance(values, int) else list(values)
    if not 1 <= len(items) <= 3:
        raise WorkbenchError(f"{what} must have 1 to 3 dimensions, got {len(items)}",
                             key=what, value=items, expected="1 to 3 integers")
    padded = [*items, 1, 1][:3]
    return (int(padded[0]), int(padded[1]), int(padded[2]))


def launch_rejection(spec: DeviceSpec, grid: Sequence[int] | int, block: Sequence[int] | int,
                     smem_bytes: int, *, static_smem_bytes: int = 0) -> Rejection | None:
    """Why this launch cannot run on ``spec``, or None when it can.

    ``smem_bytes`` is the dynamic shared memory per block; ``static_smem_bytes`` (from
    ptxas, when known) counts against the same per-block opt-in maximum.
    """
    grid3 = _dims(grid, "grid")
    block3 = _dims(block, "block")
    axes = "xyz"
    for what, dims in (("block", block3), ("grid", grid3)):
        for axis, size in zip(axes, dims, strict=True):
            if size < 1:
                return Rejection("min_dimension", size, 1,
                                 f"{what} dimension {axis} is {size}; every dimension must be >= 1")
    threads = block3[0] * block3[1] * block3[2]
    if threads > spec.max_threads_per_block:
        return Rejection("max_threads_per_block", threads, spec.max_threads_per_block,
                         f"block of {threads} threads exceeds "
                         f"max_threads_per_block={spec.max_threads_per_block}")
    for axis, size, limit in zip(axes, block3, spec.max_block_dims, strict=True):
        if size > limit:
            return Rejection(f"max_block_dim_{axis}", size, limit,
                             f"block dimension {axis}={size} exceeds its limit of {limit}")
    for axis, size, limit in zip(axes, grid3, spec.max_grid_dims, strict=True):
        if size > limit:
            return Rejection(f"max_grid_dim_{axis}", size, limit,
                             f"grid dimension {axis}={size} exceeds its limit of {limit}")
    if smem_bytes < 0:
        return Rejection("min_dynamic_smem_bytes", smem_bytes, 0,
                         f"dynamic shared memory of {smem_bytes} bytes is negative")
    total_smem = smem_bytes + static_smem_bytes
    if total_smem > spec.smem_per_block_optin_bytes:
        what = ("dynamic shared memory" if static_smem_bytes == 0
                else f"shared memory ({static_smem_bytes} static + {smem_bytes} dynamic)")
        return Rejection("smem_per_block_optin_bytes", total_smem, spec.smem_per_block_optin_bytes,
                         f"{what} of {total_smem} bytes exceeds "
                         f"smem_per_block_optin_bytes={spec.smem_per_block_optin_bytes}")
    return None


def evaluated_launch_rejection(spec: DeviceSpec, launch: Launch) -> Rejection | None:
    """:func:`launch_rejection` of an evaluated :class:`Launch`."""
    return launch_rejection(spec, launch.grid, launch.block, launch.smem_bytes)


def config_rejection(rules: LaunchRules, config: Mapping[str, Value], env: Mapping[str, Any],
                     spec: DeviceSpec) -> tuple[Launch | None, Rejection | None]:
    """Evaluate ``rules`` for ``config`` in ``env`` (the one evaluator:
    :meth:`LaunchRules.evaluate_config`) and check the launch on ``spec``.

    Returns (the launch, None) when it can run, (the launch, the rejection) when a limit
    refuses it, and (None, a ``launch_rules`` rejection) when the rules cannot be evaluated.
    """
    try:
        launch = rules.evaluate_config(config, env)
    except (TemplateError, ExpressionError) as exc:
        return None, Rejection("launch_rules", str(exc.details.get("expr", "")) or "?",
                               "an evaluable launch",
                               f"launch rules cannot be evaluated: {exc.message}")
    return launch, evaluated_launch_rejection(spec, launch)


def config_rejections(rules: LaunchRules, configs: Sequence[Mapping[str, Value]],
                      env: Mapping[str, Any], spec: DeviceSpec) -> list[Rejection | None]:
    """:func:`config_rejection`'s rejection of each of ``configs``, in order.

    Each launch expression is evaluated once over arrays of the configs' values (numpy),
    and :func:`launch_rejection` runs once per distinct launch; a config where a rule
    cannot be evaluated, or gives what is not a non-negative integer (a rules rejection
    whose text names the config), takes the scalar path, so every text is the scalar one.
    """
    if not configs:
        return []
    dims = _launch_dims(rules, configs, env)
    if dims is None:  # a rule cannot be evaluated over arrays at all
        return [config_rejection(rules, c, env, spec)[1] for c in configs]
    launches, scalar = dims
    distinct, inverse = np.unique(launches, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    verdicts = [launch_rejection(spec, [int(v) for v in row[:3]], [int(v) for v in row[3:6]],
                                 int(row[6])) for row in distinct]
    return [config_rejection(rules, c, env, spec)[1] if scalar[i] else verdicts[inverse[i]]
            for i, c in enumerate(configs)]


def _launch_dims(rules: LaunchRules, configs: Sequence[Mapping[str, Value]],
                 env: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(launches, scalar)``: per config, grid x/y/z, block x/y/z and dynamic shared
    bytes as int64 (configs, 7), and whether that config must take the scalar path (a
    rule invalid there, a non-finite, fractional, negative or out-of-int64 value). None
    when a rule raises over the arrays as a whole (a missing name, a type error)."""
    columns: dict[str, Any] = dict(env)
    for name in rules.names:
        if name in configs[0]:
            columns[name] = np.asarray([int(v) if isinstance(v, bool) else v
                                        for v in (c[name] for c in configs)])
    count = len(configs)
    exprs = [*rules.grid, *[None] * (3 - len(rules.grid)),
             *rules.block, *[None] * (3 - len(rules.block)), rules.smem_bytes]
    launches = np.ones((count, 7), dtype=np.int64)
    scalar = np.zeros(count, dtype=bool)
    try:
        for column, expr in enumerate(exprs):
            if expr is None:  # a dimension the rules leave out is 1
                continue
            values, invalid = expr.evaluate_masked(columns)
            values = np.broadcast_to(values, (count,))
            scalar |= np.broadcast_to(invalid, (count,))
            if values.dtype.kind == "f":
                finite = np.isfinite(values)
                bad = ~finite | (np.abs(np.where(finite, values, 0)) >= 2.0 ** 62)
                bad |= np.where(finite, values, 0) % 1 != 0
                scalar |= bad
                values = np.where(bad, 0, values)
            elif values.dtype.kind not in "biu":
                return None
            values = values.astype(np.int64)
            scalar |= values < 0
            launches[:, column] = values
        if rules.pdl is not None:  # read only for whether it can be evaluated
            values, invalid = rules.pdl.evaluate_masked(columns)
            scalar |= np.broadcast_to(invalid, (count,))
            if values.dtype.kind == "f":
                scalar |= ~np.isfinite(np.broadcast_to(values, (count,)))
    except ExpressionError:
        return None
    launches[scalar] = 1
    return launches, scalar


def resource_rejection(spec: DeviceSpec, usage: ResourceUsage, threads_per_block: int, *,
                       min_occupancy: float = 0.0,
                       allow_spills: bool = True) -> Rejection | None:
    """Why ptxas's report (``usage``, with the launch's dynamic shared memory included)
    rules a config out: shared memory over the opt-in limit, no resident block (naming the
    resource), occupancy under ``min_occupancy`` (fraction of the SM's warps), or spills
    when ``allow_spills`` is False."""
    smem = usage.smem_bytes_per_block
    if smem > spec.smem_per_block_optin_bytes:
        return Rejection("smem_per_block_optin_bytes", smem, spec.smem_per_block_optin_bytes,
                         f"shared memory of {smem} bytes per block exceeds "
                         f"smem_per_block_optin_bytes={spec.smem_per_block_optin_bytes}",
                         "resources")
    occ = occupancy(spec, usage, threads_per_block)
    if occ.blocks_per_sm == 0:
        allowed: dict[str, int] = {"threads": spec.max_threads_per_block,
                                   "registers": spec.max_regs_per_thread,
                                   "shared_memory": spec.smem_per_block_optin_bytes}
        asked: dict[str, int] = {"threads": threads_per_block,
                                 "registers": usage.regs_per_thread,
                                 "shared_memory": smem}
        return Rejection(occ.limited_by, asked.get(occ.limited_by, 0),
                         allowed.get(occ.limited_by, 0),
                         f"no block fits on an SM (limited by {occ.limited_by}: "
                         f"{usage.regs_per_thread} regs/thread, {threads_per_block} threads, "
                         f"{smem} B smem)", "resources")
    if occ.fraction < min_occupancy:
        return Rejection("min_occupancy", round(occ.fraction, 4), min_occupancy,
                         f"occupancy {occ.fraction:.2f} (limited by {occ.limited_by}) "
                         f"is below the floor {min_occupancy:.2f}", "resources")
    if usage.spills and not allow_spills:
        return Rejection("spills", usage.spill_store_bytes + usage.spill_load_bytes, 0,
                         f"registers spill ({usage.spill_store_bytes} bytes stored, "
                         f"{usage.spill_load_bytes} loaded)", "resources")
    return None


def needs_smem_optin(dynamic_smem_bytes: int) -> bool:
    """Whether a launch with this much dynamic shared memory must first raise the
    function's ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` attribute."""
    return dynamic_smem_bytes > SMEM_WITHOUT_OPTIN_BYTES
