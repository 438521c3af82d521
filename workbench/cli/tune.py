"""``workbench tune``: a thin argparse layer over :meth:`workbench.api.Workbench.tune`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from workbench.cli._common import (
    DTYPE_HELP,
    FOLDER_HELP,
    Progress,
    count,
    no_live_advice,
    runner_for,
    seconds,
)
from workbench.core.conditions import CONDITIONS

ORDER = 30


def cmd_tune(args: argparse.Namespace) -> int:
    """Search each shape (``--shape``, ``--shapes`` or ``--sweep``) in turn, one store."""
    from workbench.cli.dispatch import shape_list

    folder, shapes = shape_list(args)
    status = 0
    for name in shapes:
        status = max(status, _tune_one(argparse.Namespace(**{**vars(args), "shape": name}),
                                       folder))
    return status


def _tune_one(args: argparse.Namespace, folder: Any) -> int:
    """Search one shape on the GPU (or a replay), store every trial, report the best."""
    from workbench.api import Workbench
    from workbench.core.budget_words import BudgetSplit
    from workbench.core.conditions import PickRule, check_conditions
    from workbench.core.errors import ClusterError, NoGPUError, RecordingError
    from workbench.core.events import BestImproved, TrialFinished
    from workbench.core.records import Status
    from workbench.search.tune import TuneRequest

    dtype = folder.check_dtype(args.dtype or folder.dtypes[0])
    folder.shape_values(args.shape)
    TuneRequest(args.shape, dtype, strategy=args.strategy)  # a bad name fails before any I/O
    if args.replay is not None and args.timer is not None:
        print(f"--timer {args.timer} applies to live measurement; a replay answers with the "
              f"times its recording measured (see the recording's bench settings)",
              file=sys.stderr)
        return 2
    from workbench.store.postgres import open_store

    open_store(args.store).close()  # a store that cannot be written fails here, before GPU time
    if args.gpus is not None and args.cluster is None:
        print("--gpus goes with --cluster local (one Dask worker per GPU)", file=sys.stderr)
        return 2
    if args.cluster is not None and args.replay is not None:
        print("--cluster measures live on the cluster's GPUs; a replay needs no cluster",
              file=sys.stderr)
        return 2
    try:
        runner = runner_for(folder, args.replay, timer=args.timer or "auto",
                            cluster=args.cluster, gpus=args.gpus)
    except ClusterError as exc:
        print(f"workbench tune --cluster {args.cluster}: {exc.message}", file=sys.stderr)
        return 3
    except NoGPUError as exc:
        print(no_live_advice("tune", args.folder, folder, args.shape, exc.message.removeprefix(
            "no live measurement here: ")), file=sys.stderr)
        return 3
    except RecordingError as exc:
        if args.replay is None:
            raise
        print(no_live_advice("tune", args.folder, folder, args.shape, exc.message,
                             replay_asked=True), file=sys.stderr)
        return 3
    out = args.stdout
    with runner:
        wb = Workbench(folder, store=args.store, runner=runner)
        space = folder.space(args.shape, dtype, runner.device)
        budget = args.budget if args.budget is not None else space.size
        # the budget counts stored measurements (resumed trials count): say how many more
        split = BudgetSplit(budget, sum(1 for r in wb.results(args.shape, dtype)
                                        if r.status is not Status.PRUNED and r.config in space))
        timer = getattr(runner, "timer_note", "")
        print(f"{folder.name} @ {args.shape} [{dtype}] on {runner.description}\n"
              + (f"timer {timer}\n" if timer else "") +
              f"space: {space.size} configs after constraints ({space.raw_size} raw); "
              f"strategy {args.strategy}, budget {budget}: {split.words}; store {args.store}",
              file=out)
        bar = Progress(split.more, "tuning", force=args.progress)

        def on_event(event: object) -> None:
            if isinstance(event, TrialFinished) and event.result.status is not Status.PRUNED:
                bar.step()
            elif isinstance(event, BestImproved) and args.verbose:
                print(f"  best {event.result.median_us:.2f} us {dict(event.result.config)}",
                      file=out)

        try:
            report = wb.tune(args.shape, dtype, args.strategy, budget, timeout_s=args.max_time,
                             patience=args.patience, seed=args.seed, batch=args.batch,
                             confirm=args.confirm, top=args.top, callbacks=[on_event],
                             conditions=check_conditions(
                                 [c.strip() for c in args.conditions.split(",") if c.strip()]),
                             pick_rule=PickRule(condition=args.condition)
                             if args.condition else None,
                             widen=args.widen, widen_budget=args.widen_budget,
                             l2_profile=not args.no_l2)
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
    p.add_argument("folder", help=FOLDER_HELP)
    p.add_argument("--shape", help="a named shape of kernel.toml (the base of --sweep)")
    p.add_argument("--shapes", help="several named shapes, comma separated, tuned in turn")
    p.add_argument("--sweep", help="SIZE=LO..HI:log2 or SIZE=A,B,C: shapes that vary one size "
                                   "of --shape (named SIZE<value>), tuned in turn; then "
                                   "`workbench dispatch` with the same flags")
    p.add_argument("--dtype", help=DTYPE_HELP)
    p.add_argument("--strategy", default="guided",
                   help="guided (default) | exhaustive | random | tpe | gp | cmaes")
    p.add_argument("--budget", type=count(1), default=None,
                   help="evaluations (default: the whole space); resumed trials count")
    p.add_argument("--patience", type=count(1), default=None,
                   help="stop after this many evaluations without a new best")
    p.add_argument("--max-time", type=seconds, default=None, help="wall-time budget in seconds")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the strategy's random choices: the same seed searches in the same order (default 0)")
    p.add_argument("--batch", type=count(1), default=None,
                   help="candidates handed to the runner at once, compiled in parallel "
                        "(default 16; with --cluster 16 per GPU worker, the next batch "
                        "compiled while one is measured)")
    p.add_argument("--top", type=count(1), default=5,
                   help="how many of the fastest configs the report lists (default 5)")
    p.add_argument("--confirm", type=count(0), default=5, metavar="K",
                   help="after the search, measure the K fastest configs again: one round "
                        "chooses, a second is reported (the search's best time is a minimum "
                        "over many noisy medians); stored as re-measurements; 0 turns it off")
    p.add_argument("--conditions", default=",".join(CONDITIONS), metavar="A,B",
                   help="cache conditions the confirmation measures every finalist under: "
                        + "; ".join(f"{k}: {v}" for k, v in CONDITIONS.items())
                        + " (default: all; 'read' alone is the search's condition only)")
    p.add_argument("--condition", choices=list(CONDITIONS), default=None,
                   help="pick the fastest under this condition (your deployment) instead of "
                        "the best geometric mean over conditions; never slower than the "
                        "baseline under any condition either way")
    p.add_argument("--no-l2", action="store_true",
                   help="2-D tiled kernels: skip profiling the finalists' L2 hit rate with "
                        "Nsight Compute (shown beside their times where ncu is present)")
    p.add_argument("--widen", type=count(0), default=0, metavar="ROUNDS",
                   help="after the search, up to ROUNDS times: where the fastest configs sit "
                        "on a range edge, extend that range along its kind (pow2 doubles, int "
                        "steps; a choice is named, not invented) within the device's limits "
                        "and continue the search, every measured point kept")
    p.add_argument("--widen-budget", type=count(1), default=40, metavar="N",
                   help="evaluations added per --widen round (default 40)")
    p.add_argument("--store", default="workbench.sqlite",
                   help="SQLite file, or postgresql://user@host/db[?schema=name] for a store "
                        "several drivers share; rerunning resumes where it stopped")
    p.add_argument("--cluster", default=None, metavar="local|ADDRESS",
                   help="measure on a Dask cluster's GPU workers: local (dask-cuda, one "
                        "worker per GPU of this host) or a scheduler address")
    p.add_argument("--gpus", type=int, default=None,
                   help="with --cluster local: how many of this host's GPUs (default: all)")
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
