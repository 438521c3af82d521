"""``workbench init KERNEL.cu``: a kernel folder from a bare CUDA kernel.

Parses the kernel with the CUDA parser, infers each pointer's role from what the kernel
reads and writes, and writes ``baseline.cu`` and a ``kernel.toml`` whose problem sizes,
buffer extents (and the grid, unless given) are placeholders to fill in. Next:
``workbench propose FOLDER --write`` then ``workbench tune FOLDER``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.scaffold import scaffold

ORDER = 5


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise WorkbenchError(f"{option} {item!r}: expected NAME=VALUE, e.g. {option} y=out",
                                 key=option, value=item, expected="NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def target_folder(kernel: Path, out: str | None) -> Path:
    """--out, else the .cu's own folder when it is called baseline.cu, else a folder named
    after the .cu next to it."""
    if out:
        return Path(out)
    if kernel.name == "baseline.cu":
        return kernel.parent
    return kernel.parent / kernel.stem


def cmd_init(args: argparse.Namespace) -> int:
    out = args.stdout
    kernel = Path(args.kernel)
    if not kernel.is_file():
        raise WorkbenchError(f"{kernel}: no such file; expected a CUDA source (.cu) with a "
                             "__global__ kernel", file=str(kernel))
    plan = scaffold(kernel.read_text(), str(kernel), args.entry, grid=args.grid,
                    block=args.block, roles=_pairs(args.role, "--role"),
                    dtypes=_pairs(args.dtype, "--dtype"))
    folder = target_folder(kernel, args.out)
    toml = folder / "kernel.toml"
    if toml.exists() and not args.force:
        raise WorkbenchError(f"{toml} exists; pass --force to overwrite it (or --out DIR)",
                             file=str(toml))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "baseline.cu").write_text(plan.baseline_source)
    toml.write_text(plan.kernel_toml())
    k = plan.kernel
    print(f"{folder}: kernel folder for {k.name} ({kernel}:{k.line})", file=out)
    for a in plan.args:
        print(f"  {a.name:<16} {a.dtype:<9} {a.role:<7} {a.why}", file=out)
    for note in plan.notes:
        print(f"  note: {note}", file=out)
    if plan.to_fill:
        print(f"fill in (kernel.toml, each FILL_IN): {', '.join(plan.to_fill)}", file=out)
    print(f"then: workbench propose {folder} --write && workbench tune {folder} "
          "--shape large", file=out)
    return 0


def register(sub: Any) -> None:
    """Add the ``init`` subcommand."""
    p = sub.add_parser("init", help="make a kernel folder from a bare .cu kernel")
    p.add_argument("kernel", help="CUDA source with the __global__ kernel")
    p.add_argument("--entry", help="the kernel to use when the file defines several")
    p.add_argument("--grid", help="baseline grid, e.g. 'ceil_div(n, 256)' or 'rows, 4'")
    p.add_argument("--block", help="baseline block, e.g. '256' (default: __launch_bounds__)")
    p.add_argument("--role", action="append", metavar="NAME=ROLE",
                   help="an argument's role where it cannot be inferred: in, out or inout")
    p.add_argument("--dtype", action="append", metavar="NAME=DTYPE",
                   help="an argument's dtype where its C type has none (e.g. float4* -> f32)")
    p.add_argument("--out", help="the folder to write (default: next to the .cu, named after it)")
    p.add_argument("--force", action="store_true", help="overwrite an existing kernel.toml")
    p.set_defaults(func=cmd_init)
