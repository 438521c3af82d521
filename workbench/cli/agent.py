"""``workbench agent``: plan -> generate -> review -> tune -> test, repeated."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from workbench.cli._common import (
    DTYPE_HELP,
    FOLDER_HELP,
    STRATEGY_HELP,
    count,
    format_table,
    llm_client,
    llm_options,
    no_live_advice,
    runner_for,
)
from workbench.core.kernel_folder import load_kernel_folder

ORDER = 50


def cmd_agent(args: argparse.Namespace) -> int:
    from workbench.agent import run_agent, speedup_per_iteration
    from workbench.agent.queries import iteration_endings
    from workbench.core.errors import NoGPUError, RecordingError
    from workbench.store.sqlite import SQLiteStore

    folder = load_kernel_folder(args.folder)
    store = SQLiteStore(args.store)  # fails before any GPU time when it cannot be written
    client = llm_client(args)
    # A runner instance (not a factory): a live one lets the gate check each proposal's
    # correctness on the GPU, which --auto-approve requires.
    try:
        runner: Any = runner_for(folder, args.replay)
    except NoGPUError as exc:
        print(no_live_advice("agent", args.folder, folder, args.shape, exc.message.removeprefix(
            "no live measurement here: ")), file=sys.stderr)
        return 2
    except RecordingError as exc:
        if args.replay is None:
            raise
        print(no_live_advice("agent", args.folder, folder, args.shape, exc.message,
                             replay_asked=True), file=sys.stderr)
        return 2
    try:
        outcome = run_agent(folder, runner=runner, store=store, client=client,
                            iterations=args.iterations, llm_calls=args.llm_calls,
                            auto_approve=args.auto_approve,
                            allow_unverified=args.allow_unverified, strategy=args.strategy,
                            budget=args.budget, confirm=args.confirm, shape=args.shape,
                            dtype=args.dtype, widen=args.widen,
                            initial_template=folder.template if args.replay is not None
                            else None)
    finally:
        runner.close()
    out = args.stdout
    print(f"session {outcome.session_id}, {outcome.iterations} iteration(s), "
          f"{outcome.llm_calls} LLM calls", file=out)
    for line in why_lines(client, outcome.llm_calls, outcome.iterations,
                          getattr(runner, "description", "") if args.replay is not None
                          else ""):
        print(line, file=out)
    endings = iteration_endings(store, outcome.session_id)
    rows = [[p.iteration, p.best_us, p.baseline_us, p.speedup,
             endings.get(p.iteration, "")]
            for p in speedup_per_iteration(store, outcome.session_id)]
    if rows:
        print(format_table(["iteration", "best_so_far_us", "baseline_us", "speedup",
                            "this iteration"], rows), file=out)
    ending, status = agent_ending(outcome.state.value, outcome.reason)
    if ending == "review":
        print("a template waits for review: approve it in the panel or rerun with "
              "--auto-approve", file=out)
    print(f"agent {ending}: {outcome.reason}", file=out)  # the last line says how it ended
    return status


def why_lines(client: Any, llm_calls: int, iterations: int, replay: str) -> list[str]:
    """What the numbers above rest on: where plans and templates came from (and so why no
    LLM call was made) and what measured."""
    lines = []
    if client is None:
        lines.append("0 LLM calls: no LLM endpoint is configured (--model or WORKBENCH_MODEL, "
                     "with OPENAI_BASE_URL and OPENAI_API_KEY), so plans came from the offline "
                     "planner and templates from the offline templater")
    elif llm_calls == 0:
        lines.append(f"0 LLM calls: the LLM ({client.settings.model} at "
                     f"{client.settings.base_url or 'the default endpoint'}) is asked from "
                     "iteration 2 on; iteration 1 tunes the folder's template"
                     if iterations <= 1 else
                     "0 LLM calls: the loop ended before it asked the LLM")
    if replay:
        lines.append(f"measured by {replay} (the recorded GPU's times; iteration 1 tunes the "
                     "folder's template, the one the recording holds)")
    return lines


#: How an agent run ended -> exit status (documented in ``workbench agent --help``).
AGENT_EXIT = {"done": 0, "failed": 1, "budget": 3, "review": 4}


def agent_ending(state: str, reason: str) -> tuple[str, int]:
    """``done`` (its iterations ran, or a plan said stop) | ``failed`` | ``budget`` (the
    LLM-call budget ran out first) | ``review`` (a template waits for a human), with its exit
    status."""
    if state == "failed":
        ending = "failed"
    elif state == "review":
        ending = "review"
    elif "LLM-call budget spent" in reason:
        ending = "budget"
    else:
        ending = "done"
    return ending, AGENT_EXIT[ending]


def register(sub: Any) -> None:
    """Add the ``agent`` subcommand."""
    p = sub.add_parser("agent", help="plan -> generate -> review -> tune -> test, repeated",
                       epilog="The last line says how it ended: `agent done: ...` (exit 0), "
                              "`agent failed: ...` (1), `agent budget: ...` (3) or "
                              "`agent review: ...` (4, a template waits for approval).")
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--iterations", type=count(1), default=3,
                   help="plan -> generate -> review -> tune -> test rounds (default 3)")
    p.add_argument("--llm-calls", type=count(0), default=12, help="LLM-call budget")
    p.add_argument("--model", help="LLM model for plans and templates (default: $WORKBENCH_MODEL; none: the offline planner and templater)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--auto-approve", action="store_true",
                   help="tune proposed templates without a human approval (without a GPU, "
                        "only templates verified against the baseline; see "
                        "--allow-unverified)")
    p.add_argument("--allow-unverified", action="store_true",
                   help="with --auto-approve and no GPU: approve templates whose correctness "
                        "could not be checked")
    p.add_argument("--shape", default=None,
                   help="the named shape each tune step searches (default: the first)")
    p.add_argument("--dtype", default=None, help=DTYPE_HELP)
    p.add_argument("--strategy", default="guided", help=STRATEGY_HELP)
    p.add_argument("--budget", type=count(1), default=32, help="evaluations per tune step")
    p.add_argument("--confirm", type=count(0), default=5, metavar="K",
                   help="after each tune step, measure the K fastest configs again like "
                        "`workbench tune --confirm` (the test step reports the confirmed "
                        "pick); 0 turns it off")
    p.add_argument("--widen", type=count(0), default=0, metavar="ROUNDS",
                   help="after each tune step, up to ROUNDS times: where the fastest configs "
                        "sit on a range edge, extend that range along its kind and continue "
                        "(as `workbench tune --widen`); 0 turns it off")
    p.add_argument("--store", default="workbench.sqlite",
                   help="SQLite file for the session: its trials, reviews and every LLM call (scrubbed)")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="measure by replaying a recording (newest if no file is named)")
    llm_options(p)
    p.set_defaults(func=cmd_agent)
