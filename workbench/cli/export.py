"""``workbench export``: the stored pick of one shape and dtype as a ``#define`` header or
JSON, read from the store alone (no runner, no GPU).

    workbench export FOLDER --shape decode --dtype bf16 --store s.sqlite --out pick.h
    workbench export FOLDER --shape decode --format json --out pick.json [--force]

The answer is the newest pick a tune stored for the folder's template text at that shape and
dtype (on any device; the file names it): the confirmed pick where a confirmation ran, else
the search's fastest trial, and the file and the terminal say it is a fallback and why.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from workbench.cli._common import DTYPE_HELP, FOLDER_HELP
from workbench.core.errors import WorkbenchError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.write_policy import write_file


def cmd_export(args: argparse.Namespace) -> int:
    """Write the stored pick of ``--shape``/``--dtype`` as a header or JSON."""
    from workbench.store.exports import pick_dict, pick_header, template_pick
    from workbench.store.postgres import open_store

    out = args.stdout
    folder = load_kernel_folder(args.folder)
    dtype = folder.check_dtype(args.dtype or folder.dtypes[0])
    folder.shape_values(args.shape)  # ShapeError naming the known shapes
    store = open_store(args.store)
    try:
        pick = template_pick(store, folder.name, folder.template.source_sha256, args.shape,
                             dtype)
    finally:
        store.close()
    if pick is None:
        raise WorkbenchError(f"no ok trial of {folder.name} {args.shape}/{dtype} in "
                             f"{args.store}; tune it first", key="shape", value=args.shape)
    text = (pick_header(pick) if args.format == "header"
            else json.dumps(pick_dict(pick), indent=2) + "\n")
    print(f"{folder.name} {args.shape}/{dtype}: {pick.describe()}", file=out)
    if args.out:
        target = Path(args.out)
        written = write_file(target.parent, target.name, text, overwrite=args.force)
        print(f"wrote {written}", file=out)
    else:
        print(text, file=out, end="")
    return 0


ORDER = 34


def register(sub: Any) -> None:
    """Add the ``export`` subcommand."""
    p = sub.add_parser("export", help="the stored pick of one shape as a #define header or "
                                       "JSON (says when it is the search's best, unconfirmed)")
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--shape", required=True, help="the named shape whose stored pick to export")
    p.add_argument("--dtype", help=DTYPE_HELP)
    p.add_argument("--store", default="workbench.sqlite", help="where the tune stored it")
    p.add_argument("--format", choices=("header", "json"), default="header",
                   help="header (default: C++ #defines) or json")
    p.add_argument("--out", help="file to write (default: print it)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=cmd_export)
