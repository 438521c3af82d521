"""``workbench space``: list feasible configs with predicted occupancy (and why not)."""

from __future__ import annotations

import argparse
import csv
import itertools
import json
from typing import Any

from workbench.cli._common import ARCH_HELP, DTYPE_HELP, FOLDER_HELP, count, format_table
from workbench.cli.check import compile_configs, hardware_verdict
from workbench.core.hardware import DEFAULT_DEVICE, get_device
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Config

ORDER = 20


def cmd_space(args: argparse.Namespace) -> int:
    folder = load_kernel_folder(args.folder)
    spec = get_device(args.device)
    dtype = args.dtype or folder.dtypes[0]
    folder.check_dtype(dtype)
    folder.shape_values(args.shape)
    space = folder.space(args.shape, dtype, spec)
    names = [p.name for p in space.params]
    raw_configs = [Config(dict(zip(names, values, strict=True)))
                   for values in itertools.product(*(p.values() for p in space.params))]
    rejections = {c: space.rejection(c) for c in raw_configs}
    feasible = [c for c, why in rejections.items() if why is None]
    usage: dict[Config, Any] = {}
    if not args.no_compile and feasible:
        usage = compile_configs(folder, feasible, dtype, args.arch, f"compiling {dtype}", args.jobs)
    records = []
    for cfg, reason in rejections.items():
        v = None
        if reason is not None:
            reason = f"constraint: {reason}"
        else:
            res = usage.get(cfg)
            if res is not None and not res.ok:
                reason = f"compile error ({res.error_kind}): {res.error_summary}"
            else:
                v = hardware_verdict(folder, cfg, args.shape, dtype, spec,
                                     res.usage if res is not None else None)
                reason = v.reason and f"hardware: {v.reason}"
        occ = v.occupancy if v else None
        records.append({**dict(cfg), "feasible": reason is None, "reason": reason or "",
                        "threads": v.threads_per_block if v else None,
                        "blocks": v.blocks if v else None,
                        "regs": v.usage.regs_per_thread if v and v.usage else None,
                        "occupancy": round(occ.fraction, 4) if occ else None,
                        "limited_by": occ.limited_by if occ else None})
    shown = records if args.all else [r for r in records if r["feasible"]]
    if args.format == "json":
        json.dump({"kernel": folder.name, "shape": args.shape, "dtype": dtype, "device": spec.key,
                   "raw": space.raw_size, "after_constraints": space.size,
                   "feasible": sum(r["feasible"] for r in records), "configs": shown},
                  args.stdout, indent=1)
        args.stdout.write("\n")
    elif args.format == "csv":
        if shown:
            writer = csv.DictWriter(args.stdout, fieldnames=list(shown[0]))
            writer.writeheader()
            writer.writerows(shown)
    else:
        headers = list(records[0]) if records else []
        print(format_table(headers, [[r[h] for h in headers] for r in shown]), file=args.stdout)
        pruned = [r for r in records if not r["feasible"]]
        print(f"\n{folder.name} @ {args.shape} [{dtype}] on {spec.key}: raw {space.raw_size}, "
              f"after constraints {space.size}, feasible {len(records) - len(pruned)}",
              file=args.stdout)
    return 0


def register(sub: Any) -> None:
    """Add the ``space`` subcommand."""
    p = sub.add_parser("space", help="list feasible configs with predicted occupancy")
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--shape", required=True, help="a named shape of kernel.toml")
    p.add_argument("--dtype", help=DTYPE_HELP)
    p.add_argument("--device", default=DEFAULT_DEVICE, help="device spec for hardware pruning")
    p.add_argument("--arch", default="sm_90a", help=ARCH_HELP)
    p.add_argument("--format", choices=["table", "csv", "json"], default="table",
                   help="table (default, aligned text), csv or json (with the raw and after-constraints counts)")
    p.add_argument("--all", "--show-pruned", dest="all", action="store_true",
                   help="include pruned configs with reasons")
    p.add_argument("--no-compile", action="store_true",
                   help="skip compiling (no register/occupancy pruning)")
    p.add_argument("--jobs", type=count(1), default=None, help="parallel nvcc processes")
    p.set_defaults(func=cmd_space)
