"""``workbench agent``: plan -> generate -> review -> tune -> test, repeated."""

from __future__ import annotations

import argparse
from typing import Any

from workbench.cli._common import format_table, llm_client, runner_for
from workbench.core.kernel_folder import load_kernel_folder

ORDER = 50


def cmd_agent(args: argparse.Namespace) -> int:
    from workbench.agent import run_agent, speedup_per_iteration
    from workbench.engine.runner import LocalRunner
    from workbench.store.sqlite import SQLiteStore

    folder = load_kernel_folder(args.folder)
    client = llm_client(args)
    store = SQLiteStore(args.store)
    runner: Any
    if args.replay is not None:
        runner = runner_for(folder, args.replay)
    else:
        LocalRunner(folder).close()  # fails fast with NoGPUError (and the replay hint)

        def runner(template: Any) -> Any:
            return LocalRunner(folder, template)
    outcome = run_agent(folder, runner=runner, store=store, client=client,
                        iterations=args.iterations, llm_calls=args.llm_calls,
                        auto_approve=args.auto_approve, strategy=args.strategy,
                        budget=args.budget, shape=args.shape, dtype=args.dtype,
                        initial_template=folder.template if args.replay is not None else None)
    out = args.stdout
    print(f"agent {outcome.state}: {outcome.reason} (session {outcome.session_id}, "
          f"{outcome.llm_calls} LLM calls)", file=out)
    rows = [[p.iteration, p.best_us, p.baseline_us, p.speedup]
            for p in speedup_per_iteration(store, outcome.session_id)]
    if rows:
        print(format_table(["iteration", "best_us", "baseline_us", "speedup"], rows), file=out)
    if outcome.waiting_for_review:
        print("a template waits for review: approve it in the panel or rerun with "
              "--auto-approve", file=out)
    return 0 if outcome.state == "done" else 1


def register(sub: Any) -> None:
    """Add the ``agent`` subcommand."""
    p = sub.add_parser("agent", help="plan -> generate -> review -> tune -> test, repeated")
    p.add_argument("folder")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--llm-calls", type=int, default=12, help="LLM-call budget")
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--auto-approve", action="store_true",
                   help="tune proposed templates without a human approval")
    p.add_argument("--shape", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--strategy", default="guided")
    p.add_argument("--budget", type=int, default=32, help="evaluations per tune step")
    p.add_argument("--store", default="workbench.sqlite")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="measure by replaying a recording (newest if no file is named)")
    p.set_defaults(func=cmd_agent)
