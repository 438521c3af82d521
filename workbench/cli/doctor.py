"""``workbench doctor``: what this machine has for each part, and what to install."""

from __future__ import annotations

import argparse
from typing import Any

ORDER = 95


def cmd_doctor(args: argparse.Namespace) -> int:
    """What is present (nvcc, GPU, pycuda, CUPTI, ncu, LLM endpoint), what to install."""
    from workbench.engine.doctor import format_report, run_checks

    print(format_report(run_checks(llm=not args.no_llm)), file=args.stdout)
    return 0


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    p = sub.add_parser("doctor", help="what this machine has for each part, what to install")
    p.add_argument("--no-llm", action="store_true", help="skip probing the LLM endpoint")
    p.set_defaults(func=cmd_doctor)
