"""``workbench init KERNEL.cu``: a kernel folder from a bare CUDA kernel.

Parses the kernel with the CUDA parser, infers each pointer's role from what the kernel
reads and writes, and writes ``baseline.cu`` and a ``kernel.toml`` whose problem sizes,
buffer extents (and the grid, unless given) are placeholders to fill in. Next:
``workbench propose FOLDER --write`` then ``workbench tune FOLDER``.

The source is read as at most 1 MiB of strict UTF-8
(:data:`workbench.core.cuda_source.MAX_SOURCE_BYTES`; the parser's other limits are listed
in that module). Both files are written through :mod:`workbench.core.write_policy` with the
kernel folder's parent as the root: the kernel folder, ``baseline.cu`` and ``kernel.toml``
may not be symlinks (not even with ``--force``), a file where the folder should be is
refused, and an existing ``baseline.cu`` or ``kernel.toml`` is replaced only with
``--force`` (or, for ``baseline.cu``, when it is the very source being read). Every check
runs before the first byte is written.
"""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path
from typing import Any

from workbench.core.cuda_source import MAX_SOURCE_BYTES, check_source_size, decode_cuda
from workbench.core.errors import WorkbenchError
from workbench.core.kernel_folder.scaffold import scaffold
from workbench.core.write_policy import check_target, ensure_folder, write_file

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


def read_source(kernel: Path) -> str:
    """The .cu file's text: a regular file of at most MAX_SOURCE_BYTES, strict UTF-8."""
    try:
        info = kernel.stat()
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        raise WorkbenchError(f"{kernel}: no such file; expected a CUDA source (.cu) with a "
                             "__global__ kernel", file=str(kernel))
    check_source_size(info.st_size, str(kernel))
    try:
        with open(kernel, "rb") as fh:
            data = fh.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise WorkbenchError(f"{kernel}: cannot be read ({exc.strerror or exc})",
                             file=str(kernel)) from None
    return decode_cuda(data, str(kernel))


def _root_of(folder: Path) -> Path:
    """The nearest existing folder above ``folder``: the root its writes are checked in."""
    root = folder.parent
    while not os.path.lexists(root) and root != root.parent:
        root = root.parent
    return root


def _check_existing(path: Path, force: bool) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        return  # the write policy names what is wrong with the path
    if stat.S_ISREG(info.st_mode) and not force:
        raise WorkbenchError(f"{path} exists; pass --force to overwrite it (or --out DIR)",
                             file=str(path))


def cmd_init(args: argparse.Namespace) -> int:
    out = args.stdout
    kernel = Path(args.kernel)
    text = read_source(kernel)
    plan = scaffold(text, str(kernel), args.entry, grid=args.grid,
                    block=args.block, roles=_pairs(args.role, "--role"),
                    dtypes=_pairs(args.dtype, "--dtype"))
    toml_text = plan.kernel_toml()
    folder = target_folder(kernel, args.out)
    where = Path(os.path.abspath(folder))
    root = _root_of(where)
    if os.path.lexists(where) and not os.path.islink(where) and not where.is_dir():
        raise WorkbenchError(f"{folder} exists and is not a folder; remove it or choose "
                             "another folder with --out DIR", file=str(folder))
    baseline, toml = where / "baseline.cu", where / "kernel.toml"
    # Rewriting the source being read (k/baseline.cu -> k/baseline.cu with extern "C") is
    # what the user asked for; any other existing file needs --force.
    rewrite_source = Path(os.path.abspath(kernel)) == baseline
    _check_existing(toml, args.force)
    _check_existing(baseline, args.force or rewrite_source)
    check_target(root, toml, overwrite=args.force)
    check_target(root, baseline, overwrite=args.force or rewrite_source)
    ensure_folder(root, where)
    write_file(root, baseline, plan.baseline_source, overwrite=args.force or rewrite_source)
    write_file(root, toml, toml_text, overwrite=args.force)
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
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing kernel.toml and baseline.cu (never a symlink)")
    p.set_defaults(func=cmd_init)
