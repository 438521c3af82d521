"""``workbench propose``: stage 1 only (propose a template, show its diff and parameters)."""

from __future__ import annotations

import argparse
from typing import Any

from workbench.cli._common import llm_client
from workbench.core.kernel_folder import load_kernel_folder

ORDER = 40


def cmd_propose(args: argparse.Namespace) -> int:
    from workbench.agent import parameter_table, propose_only

    folder = load_kernel_folder(args.folder)
    client = llm_client(args)
    proposed = propose_only(folder, client)
    out = args.stdout
    source = "the LLM" if proposed.origin == "llm" else "the offline templater (no LLM configured)"
    print(f"{folder.name}: template proposed by {source}\n", file=out)
    print(proposed.diff, file=out)
    if proposed.template is not None:
        print(parameter_table(proposed.template), file=out)
    report = proposed.report
    if report is not None:
        print(f"\nvalidation: {report.status}", file=out)
        for line in [*report.messages(), *report.checks_skipped]:
            print(f"  - {line}", file=out)
    return 0 if report is None or report.status != "failed" else 1


def register(sub: Any) -> None:
    """Add the ``propose`` subcommand."""
    p = sub.add_parser("propose", help="stage 1 only: propose a template, show diff and parameters")
    p.add_argument("folder")
    p.add_argument("--model", help="LLM model (default: $WORKBENCH_MODEL; none = offline templater)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.set_defaults(func=cmd_propose)
