"""``workbench propose``: stage 1 only. Propose a template and show it beside its launch
rules and constraints and the verdict of the space-wide correctness gate; ``--write``
saves it into the kernel folder.

``--write`` is the command-line Approve: it records an approval of the exact template text
(reviewer: the user) in the store and writes ``template.cu`` and the ``[template]`` table,
as the panel's Approve does for a folder with no template (:meth:`Workbench.review`). A
folder that already holds a different template keeps it unless ``--force`` is given: then
nothing is approved or written and the command exits 1 saying so. Every write goes through
the one write policy (a symlinked ``kernel.toml`` or ``template.cu`` is refused, exit 1).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from workbench.cli._common import FOLDER_HELP, llm_client, llm_options
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.template import KernelTemplate

ORDER = 40


def launch_rules_text(template: Any) -> str:
    """Grid, block and shared memory of a template (or proposal) as expressions."""
    launch = template.launch.to_dict() if isinstance(template, KernelTemplate) else {
        "grid": template.launch.grid, "block": template.launch.block,
        "smem_bytes": template.launch.smem_bytes}
    return (f"launch rules: grid = [{', '.join(launch['grid'])}], "
            f"block = [{', '.join(launch['block'])}], smem_bytes = {launch['smem_bytes']}")


def print_proposal(folder: KernelFolder, proposed: Any, usable: bool, out: TextIO) -> None:
    """The diff, parameters, launch rules (beside the baseline's), the offline templater's
    transforms (each applied, or not with the reason) and validation."""
    from workbench.agent import parameter_table

    source = ("the LLM" if proposed.origin == "llm"
              else "the offline templater (no LLM configured)")
    print(f"{folder.name}: template {'proposed' if usable else 'rejected'} ({source})\n",
          file=out)
    if proposed.diff:
        print(proposed.diff, file=out)
    if proposed.template is not None:
        print(parameter_table(proposed.template), file=out)
        print(launch_rules_text(proposed.template), file=out)
        base = folder.baseline.launch
        print(f"baseline launch: grid = [{', '.join(e.text for e in base.grid)}], "
              f"block = [{', '.join(e.text for e in base.block)}]", file=out)
    if proposed.notes:
        print("\ntransforms (offline templater):", file=out)
        for note in proposed.notes:
            print(f"  - {note}", file=out)
    report = proposed.report
    if report is not None:
        print(f"\nvalidation: {report.status}", file=out)
        if report.gate is not None:
            print(f"gate: {report.gate.verdict}", file=out)
        for line in [*report.messages(), *report.checks_skipped]:
            print(f"  - {line}", file=out)


def cmd_propose(args: argparse.Namespace) -> int:
    """Stage 1 only. Every request and raw reply is kept in the store (scrubbed); the last
    line says whether a usable proposal came back (exit 0) or why not (exit 1)."""
    from workbench.agent import propose_only
    from workbench.core.errors import LLMError
    from workbench.llm.recorder import StoreRecorder
    from workbench.llm.validation import local_correctness
    from workbench.store.sqlite import SQLiteStore

    folder = load_kernel_folder(args.folder)
    out = args.stdout
    with SQLiteStore(args.store) as store:
        session = store.create_session(folder.name, notes="workbench propose")
        recorder = StoreRecorder(store, session.id)
        client = llm_client(args, recorder)
        kept = f"{args.store}, session {session.id}"
        try:
            proposed = propose_only(folder, client, correctness=local_correctness(folder))
        except LLMError as exc:
            print(f"{folder.name}: no proposal: the LLM request failed\n"
                  f"requests and raw replies: {recorder.rows} kept in {kept}", file=out)
            print(f"propose failed: {exc.message}", file=out)
            return 1
        finally:
            if client is not None:
                client.close()
    report = proposed.report
    usable = (isinstance(proposed.template, KernelTemplate) and report is not None
              and report.status != "failed")
    reasons = (list(proposed.attempts[-1].problems) if proposed.attempts
               else report.messages() if report is not None else ["no proposal"])
    print_proposal(folder, proposed, usable, out)
    if client is not None:
        print(f"requests and raw replies: {recorder.rows} kept in {kept}", file=out)
    if not usable:
        print("propose failed: " + "; ".join(reasons) + ("; nothing written" if args.write
                                                         else ""), file=out)
        return 1
    assert report is not None and isinstance(proposed.template, KernelTemplate)
    if args.write:
        return _write(args, folder, proposed.template, proposed.origin, report, out)
    print(f"propose done: {report.status}", file=out)
    return 0


def _write(args: argparse.Namespace, folder: KernelFolder, template: KernelTemplate,
           origin: str, report: Any, out: TextIO) -> int:
    """``--write``: approve and write ``template``. A folder whose template differs is only
    replaced with ``--force``; the last line says what was written (never "approved" for a
    template that did not land in the folder)."""
    from workbench.api import Workbench
    from workbench.core.errors import WriteRefusedError
    from workbench.core.kernel_folder.write import template_targets

    replacing = folder.has_template and folder.template != template
    if replacing and not args.force:
        print(f"propose refused: {folder.path} already holds a different template "
              f"({folder.template.name}); pass --force to replace template.cu and the "
              "[template] table; nothing approved or written", file=out)
        return 1
    try:
        template_targets(folder)  # a refused write is found before anything is approved
    except WriteRefusedError as exc:
        print(f"propose refused: {exc.message}; nothing approved or written", file=out)
        return 1
    wb = Workbench(folder, store=args.store)
    wb.adopt_template(template, origin=origin)
    verdict = report.gate.verdict if report.gate is not None else report.note
    try:
        message = wb.review("approved", f"workbench propose --write; gate: {verdict}")
        if folder.has_template:
            message += ("; " + wb.save_template() if replacing else
                        "; the folder already holds this template (nothing to write)")
    except WriteRefusedError as exc:
        print(f"propose refused: {exc.message}; nothing written", file=out)
        return 1
    print("\n" + message, file=out)
    print(f"propose done: {report.status}", file=out)
    if not report.verified_on_gpu:  # the last word: what the approval did not check
        from workbench.llm.space_gate import unverified_notice

        print(f"note: approved {unverified_notice(args.folder)}", file=out)
    return 0


def register(sub: Any) -> None:
    """Add the ``propose`` subcommand."""
    p = sub.add_parser("propose", help="stage 1 only: propose a template, show diff, "
                                       "parameters, launch rules and the gate's verdict")
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--model", help="LLM model (default: $WORKBENCH_MODEL; none = offline templater)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--write", action="store_true",
                   help="approve the proposal: write template.cu and the [template] table "
                        "and record the review in the store")
    p.add_argument("--force", action="store_true",
                   help="with --write: replace a different template the folder already holds")
    p.add_argument("--store", default="workbench.sqlite",
                   help="SQLite file that keeps every request and raw reply (scrubbed) and "
                        "the review --write records")
    llm_options(p)
    p.set_defaults(func=cmd_propose)
