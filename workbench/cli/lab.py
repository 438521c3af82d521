"""``workbench lab``: open JupyterLab on the notebooks."""

from __future__ import annotations

import argparse
from typing import Any

ORDER = 90


def cmd_lab(args: argparse.Namespace) -> int:
    """Open JupyterLab on the notebooks (replay without a GPU, live with one)."""
    from workbench.ui.lab import launch

    return launch(args.root, port=args.port, open_browser=not args.no_browser)


def register(sub: Any) -> None:
    """Add the ``lab`` subcommand."""
    p = sub.add_parser("lab", help="open JupyterLab on the notebooks")
    p.add_argument("--root", default="notebooks")
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--no-browser", action="store_true")
    p.set_defaults(func=cmd_lab)
