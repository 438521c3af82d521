"""The ``workbench`` command line: one subcommand per module of this package, thin over the
library.

Each public module here (``check``, ``space``, ``tune``, ...) defines ``ORDER`` (its place in
``workbench --help``) and ``register(subparsers)``, which adds its parser and sets ``func``.
Modules are discovered, so a new subcommand is a new module: no shared list to edit.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TextIO

from workbench.core.errors import WorkbenchError

__all__ = ["build_parser", "main"]


def _subcommand_modules() -> list[ModuleType]:
    modules = [importlib.import_module(f"{__name__}.{info.name}")
               for info in pkgutil.iter_modules(__path__)
               if not info.name.startswith("_")]
    found = [m for m in modules if callable(getattr(m, "register", None))]
    return sorted(found, key=lambda m: (int(getattr(m, "ORDER", 100)), m.__name__))


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand this package defines."""
    parser = argparse.ArgumentParser(
        prog="workbench", description="Kernel Workbench: make a CUDA kernel tunable, tune it, "
                                      "report it.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in _subcommand_modules():
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run one subcommand; a WorkbenchError becomes ``error: ...`` on stderr and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.stdout = stdout or sys.stdout
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
