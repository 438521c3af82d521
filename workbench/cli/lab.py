"""``workbench lab``: open JupyterLab on the notebooks, live on a GPU or replaying."""

from __future__ import annotations

import argparse
from typing import Any

ORDER = 90


def cmd_lab(args: argparse.Namespace) -> int:
    """Open JupyterLab on the notebooks (replay without a GPU, live with one)."""
    from workbench.ui.lab import launch

    extra = [a for a in args.jupyter_args if a != "--"]
    return launch(args.root, port=args.port, open_browser=not args.no_browser, extra=extra,
                  gpu_setup=not args.no_gpu_setup)


def register(sub: Any) -> None:
    """Add the ``lab`` subcommand."""
    p = sub.add_parser("lab", help="open JupyterLab on the notebooks")
    p.add_argument("--root", default="notebooks",
                   help="the folder JupyterLab opens on (default: notebooks)")
    p.add_argument("--port", type=int, default=None,
                   help="the server's port (default: Jupyter's, 8888 or the next free)")
    p.add_argument("--no-browser", action="store_true",
                   help="start the server without opening a browser (print its URL)")
    p.add_argument("--no-gpu-setup", action="store_true",
                   help="do not build pycuda on a GPU machine that lacks it (then: replay)")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER,
                   help="after --: passed to Jupyter unchanged (e.g. -- --ip=0.0.0.0)")
    p.set_defaults(func=cmd_lab)
