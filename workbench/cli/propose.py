"""``workbench propose``: stage 1 only (propose a template, show its diff and parameters)."""

from __future__ import annotations

import argparse
from typing import Any

from workbench.cli._common import llm_client, llm_options
from workbench.core.kernel_folder import load_kernel_folder

ORDER = 40


def cmd_propose(args: argparse.Namespace) -> int:
    """Stage 1 only. Every request and raw reply is kept in the store (scrubbed); the last
    line says whether a usable proposal came back (exit 0) or why not (exit 1)."""
    from workbench.agent import parameter_table, propose_only
    from workbench.core.errors import LLMError
    from workbench.core.template import KernelTemplate
    from workbench.llm.recorder import StoreRecorder
    from workbench.store.sqlite import SQLiteStore

    folder = load_kernel_folder(args.folder)
    out = args.stdout
    with SQLiteStore(args.store) as store:
        session = store.create_session(folder.name, notes="workbench propose")
        recorder = StoreRecorder(store, session.id)
        client = llm_client(args, recorder)
        kept = f"{args.store}, session {session.id}"
        try:
            proposed = propose_only(folder, client)
        except LLMError as exc:
            print(f"{folder.name}: no proposal: the LLM request failed\n"
                  f"requests and raw replies: {recorder.rows} kept in {kept}", file=out)
            print(f"propose failed: {exc.message}", file=out)
            return 1
        finally:
            if client is not None:
                client.close()
    source = "the LLM" if proposed.origin == "llm" else "the offline templater (no LLM configured)"
    report = proposed.report
    usable = (isinstance(proposed.template, KernelTemplate) and report is not None
              and report.status != "failed")
    reasons = (list(proposed.attempts[-1].problems) if proposed.attempts
               else report.messages() if report is not None else ["no proposal"])
    print(f"{folder.name}: template {'proposed' if usable else 'rejected'} ({source})\n",
          file=out)
    if proposed.diff:
        print(proposed.diff, file=out)
    if proposed.template is not None:
        print(parameter_table(proposed.template), file=out)
    if report is not None:
        print(f"\nvalidation: {report.status}", file=out)
        for line in [*report.messages(), *report.checks_skipped]:
            print(f"  - {line}", file=out)
    if client is not None:
        print(f"requests and raw replies: {recorder.rows} kept in {kept}", file=out)
    if not usable:
        print("propose failed: " + "; ".join(reasons), file=out)
        return 1
    print(f"propose done: {report.status if report else 'not validated'}", file=out)
    return 0


def register(sub: Any) -> None:
    """Add the ``propose`` subcommand."""
    p = sub.add_parser("propose", help="stage 1 only: propose a template, show diff and parameters")
    p.add_argument("folder")
    p.add_argument("--model", help="LLM model (default: $WORKBENCH_MODEL; none = offline templater)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--store", default="workbench.sqlite",
                   help="SQLite file that keeps every request and raw reply (scrubbed)")
    llm_options(p)
    p.set_defaults(func=cmd_propose)
