"""``workbench import-kt SCRIPT.py``: a kernel folder from a Kernel Tuner tuning script.

The script is read as data and never run (see :mod:`workbench.core.kt_import`): its
kernel source, ``tune_params``, ``restrictions``, grid divisors, ``block_size_names``,
``problem_size`` and ``arguments`` become ``kernel.toml`` + ``template.cu`` +
``baseline.cu`` (the kernel at the template's defaults). Next: review the template, then
``workbench tune FOLDER``.
"""

from __future__ import annotations

import argparse
from typing import Any

from workbench.core.errors import WorkbenchError
from workbench.core.kt_folder import import_kt

ORDER = 6


def _defaults(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise WorkbenchError(f"--default {item!r}: expected NAME=VALUE, e.g. --default "
                                 "block_size_x=128", key="--default", value=item,
                                 expected="NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def cmd_import_kt(args: argparse.Namespace) -> int:
    out = args.stdout
    done = import_kt(args.script, args.out, defaults=_defaults(args.default), name=args.name,
                     force=args.force)
    plan, folder = done.plan, done.folder
    print(f"{folder.path}: kernel folder for {plan.entry} from {args.script}", file=out)
    print(f"  {len(plan.params)} parameters, {len(plan.constraints)} constraints, "
          f"{plan.configs} configs at sizes {dict(plan.sizes)}", file=out)
    print(f"  defaults: {plan.default_config}", file=out)
    for arg in plan.args:
        print(f"  {arg.name:<16} {arg.dtype:<5} {arg.role:<7} {arg.why}", file=out)
    for note in plan.notes:
        print(f"  note: {note}", file=out)
    print(f"then: review {folder.path}/template.cu and kernel.toml, and "
          f"workbench tune {folder.path}", file=out)
    return 0


def register(sub: Any) -> None:
    """Add the ``import-kt`` subcommand."""
    p = sub.add_parser("import-kt", help="make a kernel folder from a Kernel Tuner script "
                                         "(read, never run)")
    p.add_argument("script", help="the Kernel Tuner tuning script (.py) with one tune_kernel "
                                  "call; files it names are read inside its folder only")
    p.add_argument("--out", help="the folder to write (default: next to the script, named "
                                 "after it)")
    p.add_argument("--default", action="append", metavar="NAME=VALUE",
                   help="a tune parameter's default (the baseline's value; default: the "
                        "first value of its list)")
    p.add_argument("--name", help="the kernel folder's name (default: the kernel's)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing kernel.toml, template.cu and baseline.cu (never a "
                        "symlink)")
    p.set_defaults(func=cmd_import_kt)
