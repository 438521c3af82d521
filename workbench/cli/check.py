"""``workbench check``: validate a kernel folder, compile it, show its space and occupancy."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.cli._common import ARCH_HELP, FOLDER_HELP, Progress, format_table
from workbench.core.feasibility import evaluated_launch_rejection, occupancy, resource_rejection
from workbench.core.hardware import DEFAULT_DEVICE, DeviceSpec, get_device
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.records import Config, Occupancy, ResourceUsage

ORDER = 10


@dataclass(frozen=True)
class ConfigVerdict:
    """Hardware feasibility of one config at one shape: why not, or predicted occupancy."""

    config: Config
    reason: str | None
    threads_per_block: int
    blocks: int
    smem_bytes: int
    usage: ResourceUsage | None = None
    occupancy: Occupancy | None = None


def hardware_verdict(folder: KernelFolder, config: Config, shape: str, dtype: str,
                     spec: DeviceSpec, usage: ResourceUsage | None = None) -> ConfigVerdict:
    """Launch limits always; shared memory, occupancy and spills when ptxas's usage is known."""
    env = folder.env(shape, dtype, spec)
    launch = folder.template.launch_for(config, env)
    refused = evaluated_launch_rejection(spec, launch)
    occ = None
    if refused is None and usage is not None:
        full = usage.with_dynamic_smem(launch.smem_bytes)
        refused = resource_rejection(spec, full, launch.threads_per_block, allow_spills=False)
        occ = occupancy(spec, full, launch.threads_per_block)
    return ConfigVerdict(config, refused.reason if refused else None, launch.threads_per_block,
                         launch.blocks, launch.smem_bytes, usage, occ)


def compile_configs(folder: KernelFolder, configs: Sequence[Config], dtype: str, arch: str,
             label: str, jobs: int | None) -> dict[Config, Any]:
    from workbench.engine.compiler import Compiler

    compiler = Compiler(arch)
    rendered = [folder.template.render(c, dtype) for c in configs]
    config_of = {inst.hash: inst.config for inst in rendered}
    bar = Progress(len(rendered), label)
    out: dict[Config, Any] = {}
    for result in compiler.compile_many(rendered, workers=jobs, on_result=lambda _: bar.step()):
        out[config_of[result.instance_hash]] = result
    return out


def cmd_check(args: argparse.Namespace) -> int:
    from workbench.engine.compiler import Compiler
    from workbench.engine.doctor import release_line

    folder = load_kernel_folder(args.folder)
    spec = get_device(args.device)
    out = args.stdout
    print(f"{folder.name}: {folder.description}", file=out)
    print(f"  folder ok: {len(folder.args)} arguments, dtypes {', '.join(folder.dtypes)}, "
          f"shapes {', '.join(folder.shapes)}", file=out)
    print(f"  template: {len(folder.template.params)} parameters "
          f"({', '.join(folder.template.param_names)}), "
          f"{len(folder.template.constraints)} constraints", file=out)

    compiler = Compiler(args.arch)
    default = folder.template.default_config()
    rows = []
    failed = False
    usage_by_dtype: dict[str, ResourceUsage | None] = {}  # the template defaults' ptxas report
    for dtype in folder.dtypes:
        for label, tmpl, cfg in (("baseline", folder.baseline, Config()),
                                 ("template@defaults", folder.template, default)):
            res = compiler.compile(tmpl.render(cfg, dtype))
            u = res.usage
            if tmpl is folder.template:
                usage_by_dtype[dtype] = u
            rows.append([label, dtype, "ok" if res.ok else res.error_kind,
                         u.regs_per_thread if u else None, u.static_smem_bytes if u else None,
                         u.stack_frame_bytes if u else None,
                         (u.spill_store_bytes + u.spill_load_bytes) if u else None,
                         round(res.compile_s, 3), "yes" if res.cached else "no"])
            if not res.ok:
                failed = True
                print(f"  {label} [{dtype}] failed to compile ({res.error_kind}): "
                      f"{res.error_summary}\n  log: {res.log_path}", file=out)
    print(f"\ncompile ({args.arch}, nvcc: {release_line(compiler.version)}):", file=out)
    print(format_table(["kernel", "dtype", "status", "regs", "smem_B", "stack_B", "spill_B",
                        "compile_s", "cached"], rows), file=out)

    print(f"\nsearch space on {spec.name} ({spec.key}), first dtype {folder.dtypes[0]}:", file=out)
    srows = []
    dtype = folder.dtypes[0]
    for shape in folder.shapes:
        space = folder.space(shape, dtype, spec)
        feasible = [c for c in space
                    if hardware_verdict(folder, c, shape, dtype, spec).reason is None]
        srows.append([shape, space.raw_size, space.size, len(feasible)])
    print(format_table(["shape", "raw", "after constraints", "after launch limits"], srows),
          file=out)

    print(f"\nresources and occupancy of the template defaults on {spec.key}:", file=out)
    orows = []
    for shape in folder.shapes:
        for d in folder.dtypes:
            v = hardware_verdict(folder, default, shape, d, spec, usage_by_dtype[d])
            occ = v.occupancy
            orows.append([shape, d, v.threads_per_block, v.blocks, v.smem_bytes,
                          v.usage.regs_per_thread if v.usage else None,
                          occ.blocks_per_sm if occ else None, occ.warps_per_sm if occ else None,
                          f"{occ.fraction:.0%}" if occ else None,
                          occ.limited_by if occ else None, v.reason or "ok"])
    print(format_table(["shape", "dtype", "threads", "blocks", "dyn_smem_B", "regs",
                        "blocks/SM", "warps/SM", "occupancy", "limited_by", "verdict"], orows),
          file=out)
    return 1 if failed else 0


def register(sub: Any) -> None:
    """Add the ``check`` subcommand."""
    p = sub.add_parser("check", help="validate a kernel folder, compile it, show its space")
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--device", default=DEFAULT_DEVICE, help="device spec for hardware pruning")
    p.add_argument("--arch", default="sm_90a", help=ARCH_HELP)
    p.set_defaults(func=cmd_check)
