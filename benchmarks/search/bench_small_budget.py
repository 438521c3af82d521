"""Quality at small budgets: the best time a strategy has found after 20, 40 and 64
evaluations, over the space's recorded optimum, replayed on the H100 sweep recordings.

A REPLAY of GPU recordings (``sample_kernels/*/recordings/*.json``), run on the CPU. Each
(recording, shape, dtype) is one problem. The kernel folders' spaces have grown since the
sweeps were recorded (knobs added), so each parameter is narrowed to the values the
recording holds (same order, same constraints): the space the sweep covered. A config of
that space the recording lacks (a pruned one) costs nothing and teaches nothing, as in
``bench_strategies.py``. Like a tune, every run first measures the template's default.

*small* problems (the size of the experts' hand-written spaces, 77-130 configs): the same
recordings with knobs pinned at their defaults, last knob first, until at most 130 configs
remain (only the ones that still hold 60 or more).

Held out: every problem of ``merge_attn_states_lse`` was chosen as the held-out recording
BEFORE any strategy was tuned on these replays; it is reported separately and took no part
in choosing a strategy's settings.

    python benchmarks/search/bench_small_budget.py [--seeds 20] [--strategies random knn guided]
    python benchmarks/search/bench_small_budget.py --merge A.json B.json --out RESULT.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_strategies import Problem, recorded_problems  # noqa: E402
from readme_tables.small_budget import render  # noqa: E402
from results_schema import run_block  # noqa: E402

from workbench.core.params import Choice, Parameter  # noqa: E402
from workbench.core.records import Status  # noqa: E402
from workbench.core.space import SearchSpace  # noqa: E402
from workbench.search.strategies import make_strategy  # noqa: E402

BUDGETS = (20, 40, 64)
HELD_OUT = "merge_attn_states_lse"
SMALL_MAX_CONFIGS = 130
SMALL_MIN_RECORDED = 60


@dataclass(frozen=True)
class Replay:
    """One problem: the recorded table over the space the sweep covered."""

    name: str
    kernel: str
    group: str  # "tuned on" | "held out" | "small"
    problem: Problem
    optimum_us: float


def narrowed(problem: Problem) -> SearchSpace:
    """The problem's space with each parameter cut to the values its recording holds."""
    params: list[Parameter] = []
    for p in problem.space.params:
        seen = {c[p.name] for c in problem.table}
        kept = tuple(v for v in p.values() if v in seen) or (p.default,)
        default = p.default if p.default in kept else kept[0]
        params.append(Choice(name=p.name, values_=kept, default=default))
    return problem.space.with_params(params)


def pinned(space: SearchSpace, table: Mapping[Any, Any]) -> SearchSpace | None:
    """The space with knobs pinned to their defaults (last first) until <= 130 configs."""
    params = list(space.params)
    for i in reversed(range(len(params))):
        current = space.with_params(params)
        if current.size <= SMALL_MAX_CONFIGS:
            break
        p = params[i]
        if p.size > 1:
            params[i] = Choice(name=p.name, values_=(p.default,), default=p.default)
    small = space.with_params(params)
    recorded = sum(1 for c in small if c in table)
    return small if small.size <= SMALL_MAX_CONFIGS and recorded >= SMALL_MIN_RECORDED else None


def replays() -> list[Replay]:
    out: list[Replay] = []
    for raw in recorded_problems():
        kernel = raw.name.split("/")[0]
        label = raw.name.replace("/h100_sxm-2026-11-22", "")
        group = "held out" if kernel == HELD_OUT else "tuned on"
        for space, grp, name in ((narrowed(raw), group, label),):
            out.append(_replay(name, kernel, grp, raw, space))
            small = pinned(space, raw.table)
            if small is not None and grp == "tuned on":
                out.append(_replay(name + " (pinned)", kernel, "small", raw, small))
    return out


def _replay(name: str, kernel: str, group: str, raw: Problem, space: SearchSpace) -> Replay:
    table = {c: r for c, r in raw.table.items() if c in space}
    problem = Problem(name, raw.source, space, table)
    return Replay(name, kernel, group, problem, problem.best_us)


def best_after(problem: Problem, strategy_name: str, seed: int,
               budgets: Sequence[int] = BUDGETS) -> list[float]:
    """Best recorded time (µs) after each budget of evaluations (inf: nothing ok yet).
    ``strategy_name`` may carry options: ``local:explore=0.2,n_startup=8``."""
    name, _, option_text = strategy_name.partition(":")
    options: dict[str, Any] = {k: _number(v) for k, v in
                               (o.split("=") for o in option_text.split(",") if o)}
    strategy = make_strategy(name, problem.space, seed, **options)
    strategy.enqueue([problem.space.default_config()])
    best = math.inf
    evaluations = 0
    out: list[float] = []
    while len(out) < len(budgets):
        configs = strategy.ask(1)
        if not configs:
            break
        result = problem.answer(configs[0])
        strategy.tell(result)
        if result.status is Status.PRUNED:
            continue
        evaluations += 1
        if result.status is Status.OK and result.median_us is not None:
            best = min(best, result.median_us)
        while len(out) < len(budgets) and evaluations == budgets[len(out)]:
            out.append(best)
    while len(out) < len(budgets):  # the space ran out before the budget: exhaustive
        out.append(best)
    return out


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def measure(replay: Replay, strategy_name: str, seeds: int) -> dict[str, Any]:
    """Per budget: median and worst over seeds of best found / optimum."""
    started = time.perf_counter()
    runs = [best_after(replay.problem, strategy_name, s) for s in range(seeds)]
    stats: dict[str, Any] = {}
    for i, budget in enumerate(BUDGETS):
        ratios = [r[i] / replay.optimum_us for r in runs]
        stats[str(budget)] = {"median": round(statistics.median(ratios), 4),
                              "worst": round(max(ratios), 4)}
    stats["wall_s"] = round(time.perf_counter() - started, 2)
    return stats


def summary(rows: Sequence[Mapping[str, Any]], strategies: Sequence[str]) -> dict[str, Any]:
    """Per group and strategy: geometric mean over problems of the per-problem median and
    worst ratio, and the single worst run, at each budget."""
    out: dict[str, Any] = {}
    for group in sorted({r["group"] for r in rows}):
        members = [r for r in rows if r["group"] == group]
        out[group] = {}
        for name in strategies:
            cells: dict[str, Any] = {}
            for budget in map(str, BUDGETS):
                medians = [r["strategies"][name][budget]["median"] for r in members]
                worsts = [r["strategies"][name][budget]["worst"] for r in members]
                cells[budget] = {"geomean_median": round(_geomean(medians), 4),
                                 "geomean_worst": round(_geomean(worsts), 4),
                                 "max_worst": round(max(worsts), 4)}
            out[group][name] = cells
    return out


def _geomean(values: Sequence[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def print_summary(report: Mapping[str, Any], out: Callable[[str], None] = print) -> None:
    out(f"best found / optimum after {'/'.join(map(str, BUDGETS))} evaluations "
        f"(seeds: {report['seeds']}): geomean over problems of the median | of the worst seed "
        "| worst single run")
    for group, by_strategy in report["summary"].items():
        out(f"-- {group}")
        for name, cells in by_strategy.items():
            parts = [f"{b}: {c['geomean_median']:.3f} | {c['geomean_worst']:.3f} | "
                     f"{c['max_worst']:.3f}" for b, c in cells.items()]
            out(f"   {name:14s} " + "   ".join(parts))


def merged(paths: Sequence[str]) -> dict[str, Any]:
    """One report from several runs' ``--out`` files (e.g. tpe run with fewer seeds):
    each problem keeps every strategy any run measured, with that run's seed count."""
    rows: dict[str, dict[str, Any]] = {}
    names: list[str] = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        for problem in doc["problems"]:
            row = rows.setdefault(problem["name"], {**problem, "strategies": {}})
            for name, stats in problem["strategies"].items():
                row["strategies"][name] = {**stats, "seeds": doc["seeds"]}
                if name not in names:
                    names.append(name)
    complete = [r for r in rows.values() if all(n in r["strategies"] for n in names)]
    return {"seeds": {n: next(r["strategies"][n]["seeds"] for r in complete) for n in names},
            "budgets": list(BUDGETS), "held_out": HELD_OUT, "problems": complete,
            "summary": summary(complete, names)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--strategies", nargs="*", default=["random", "knn", "guided", "tpe"])
    parser.add_argument("--only", nargs="*", default=[], help="problems whose name has this")
    parser.add_argument("--out", default="")
    parser.add_argument("--merge", nargs="*", default=[], help="--out files to merge, "
                        "written with a run block to --out; nothing is replayed")
    parser.add_argument("--commands", nargs="*", help="with --merge: the runs' commands")
    parser.add_argument("--date", default="", help="with --merge: the date in --out's name")
    args = parser.parse_args()
    if args.merge:
        merged_report = {"run": run_block("strategies_small_budget", " ; ".join(args.commands or []),
                                   device="cpu: 2-core development machine (no GPU), replay "
                                          "of H100 recordings", driver=None, cuda=None,
                                   date=args.date), **merged(args.merge)}
        Path(args.out).write_text(json.dumps(merged_report, indent=1) + "\n")
        print_summary(merged_report)
        print(render(merged_report))
        return
    rows: list[dict[str, Any]] = []
    for replay in replays():
        if args.only and not any(o in replay.name for o in args.only):
            continue
        row: dict[str, Any] = {"name": replay.name, "group": replay.group,
                               "space_size": replay.problem.space.size,
                               "recorded_in_space": replay.problem.recorded_in_space,
                               "optimum_us": replay.optimum_us, "strategies": {}}
        for name in args.strategies:
            row["strategies"][name] = measure(replay, name, args.seeds)
        rows.append(row)
        print(f"done {replay.name} ({replay.problem.recorded_in_space} recorded)",
              file=sys.stderr)
    report: dict[str, Any] = {"seeds": args.seeds, "budgets": list(BUDGETS),
                              "held_out": HELD_OUT, "problems": rows,
                              "summary": summary(rows, args.strategies)}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print_summary(report)


if __name__ == "__main__":
    main()
