"""``workbench tune``: a thin argparse layer over :meth:`workbench.api.Workbench.tune`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from workbench.cli._common import Progress, runner_for

ORDER = 30


def cmd_tune(args: argparse.Namespace) -> int:
    """Search one shape on the GPU (or a replay), store every trial, report the best."""
    from workbench.api import Workbench
    from workbench.core.errors import NoGPUError
    from workbench.core.events import BestImproved, TrialFinished
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.core.records import Status
    from workbench.search.tune import TuneRequest

    folder = load_kernel_folder(args.folder)
    dtype = folder.check_dtype(args.dtype or folder.dtypes[0])
    folder.shape_values(args.shape)
    TuneRequest(args.shape, dtype, strategy=args.strategy)  # a bad name fails before any I/O
    if args.replay is not None and args.timer is not None:
        print(f"--timer {args.timer} applies to live measurement; a replay answers with the "
              f"times its recording measured (see the recording's bench settings)",
              file=sys.stderr)
        return 2
    try:
        runner = runner_for(folder, args.replay, timer=args.timer or "auto")
    except NoGPUError as exc:
        print(f"workbench tune needs a CUDA GPU for live measurement: {exc.message}\n"
              f"On this machine, replay the committed recording instead:\n"
              f"  workbench tune {args.folder} --shape {args.shape} --replay", file=sys.stderr)
        return 3
    out = args.stdout
    with runner:
        wb = Workbench(folder, store=args.store, runner=runner)
        space = folder.space(args.shape, dtype, runner.device)
        budget = args.budget if args.budget is not None else space.size
        timer = getattr(runner, "timer_note", "")
        print(f"{folder.name} @ {args.shape} [{dtype}] on {runner.description}\n"
              + (f"timer {timer}\n" if timer else "") +
              f"space: {space.size} configs after constraints ({space.raw_size} raw); "
              f"strategy {args.strategy}, budget {budget}; store {args.store}", file=out)
        bar = Progress(budget, "tuning", force=args.progress)

        def on_event(event: object) -> None:
            if isinstance(event, TrialFinished) and event.result.status is not Status.PRUNED:
                bar.step()
            elif isinstance(event, BestImproved) and args.verbose:
                print(f"  best {event.result.median_us:.2f} us {dict(event.result.config)}",
                      file=out)

        try:
            report = wb.tune(args.shape, dtype, args.strategy, budget, timeout_s=args.max_time,
                             patience=args.patience, seed=args.seed, batch=args.batch,
                             confirm=args.confirm, top=args.top, callbacks=[on_event])
        except KeyboardInterrupt:  # every finished trial is already in the store
            kept = len(wb.results(args.shape, dtype))
            print(f"\ninterrupted: {kept} trials kept in {args.store}; run the same command "
                  f"again to resume", file=out)
            return 130
    print(f"stopped: {report.reason}; {report.evaluated} evaluated ({report.measured_now} "
          f"measured now, the rest resumed from the store)", file=out)
    print(report.summary(), file=out)
    return 0 if report.top else 1


def register(sub: Any) -> None:
    """Add the ``tune`` subcommand."""
    p = sub.add_parser("tune", help="search a shape on the GPU (or --replay), report the best")
    p.add_argument("folder")
    p.add_argument("--shape", required=True)
    p.add_argument("--dtype")
    p.add_argument("--strategy", default="guided",
                   help="guided (default) | exhaustive | random | tpe | gp | cmaes")
    p.add_argument("--budget", type=int, default=None,
                   help="evaluations (default: the whole space); resumed trials count")
    p.add_argument("--patience", type=int, default=None,
                   help="stop after this many evaluations without a new best")
    p.add_argument("--max-time", type=float, default=None, help="wall-time budget in seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=16,
                   help="candidates handed to the runner at once (compiled in parallel)")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--confirm", type=int, default=5, metavar="K",
                   help="after the search, measure the K fastest configs again: one round "
                        "chooses, a second is reported (the search's best time is a minimum "
                        "over many noisy medians); stored as re-measurements; 0 turns it off")
    p.add_argument("--store", default="workbench.sqlite",
                   help="SQLite file; rerunning resumes where it stopped")
    p.add_argument("--replay", nargs="?", const="", default=None, metavar="RECORDING",
                   help="answer from a recording instead of the GPU (newest if no file)")
    p.add_argument("--timer", choices=["auto", "events", "cupti"], default=None,
                   help="cupti: the kernel's own duration from CUPTI activity records (what "
                        "Nsight reports; excludes the launch gap), event pairs kept beside "
                        "it; events: a CUDA event pair around each launch; auto (default): "
                        "cupti where the GPU worker can load libcupti, else events")
    p.add_argument("--progress", action="store_true", help="progress bar even when piped")
    p.add_argument("--verbose", action="store_true", help="print every new best")
    p.set_defaults(func=cmd_tune)
