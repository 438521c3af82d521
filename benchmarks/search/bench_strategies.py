"""Sample efficiency of the search strategies, replayed on recorded measurements (CPU only).

For every (recording, shape, dtype) in ``sample_kernels/*/recordings/*.json`` the recorded
trials form a lookup table; each strategy searches the kernel's space and is answered from
the table (configs the recording lacks count as pruned: skipped, not evaluated). The score
is the number of evaluations (ok or failed trials) a strategy needs before its best is
within 2 % of the best recorded time, median over 20 seeds. Kernel Tuner's strategies run
in its simulation mode on the same table exported as a Kernel Tuner cache.

With ``--synthetic`` (or when no recording exists) a SYNTHETIC landscape (not a
measurement, labelled as such in the output) is added so the pipeline can be exercised.

    python benchmarks/search/bench_strategies.py [--seeds 20] [--synthetic] [--no-kt]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.params import Choice, Parameter  # noqa: E402
from workbench.core.records import Config, Status, TrialResult  # noqa: E402
from workbench.core.space import SearchSpace  # noqa: E402
from workbench.search.strategies import make_strategy  # noqa: E402
from workbench.store.exports import kernel_tuner_cache, write_json  # noqa: E402

OURS = ("exhaustive", "random", "knn", "guided", "tpe", "cmaes", "gp")
KT_STRATEGIES = ("random_sample", "genetic_algorithm", "simulated_annealing", "greedy_ils",
                 "diff_evo", "bayes_opt")
TOLERANCE = 0.02


class Problem:
    """One lookup table: config -> recorded result, over a search space."""

    def __init__(self, name: str, source: str, space: SearchSpace,
                 table: Mapping[Config, TrialResult]) -> None:
        self.name = name
        self.source = source
        self.space = space
        self.table = dict(table)
        times = [r.median_us for r in table.values() if r.status is Status.OK and r.median_us]
        self.best_us = min(times)
        self.target_us = self.best_us * (1 + TOLERANCE)
        self.recorded_in_space = sum(1 for c in space if c in self.table)

    def answer(self, config: Config) -> TrialResult:
        recorded = self.table.get(config)
        if recorded is None:
            return TrialResult(config, "s", "x", Status.PRUNED, reason="not in the recording")
        return recorded


def evaluations_to_target(problem: Problem, strategy_name: str, seed: int) -> int | None:
    """Evaluations until the best is within 2 % of the optimum (None: never)."""
    strategy = make_strategy(strategy_name, problem.space, seed)
    strategy.enqueue([problem.space.default_config()])
    evaluations = 0
    while True:
        configs = strategy.ask(1)
        if not configs:
            return None
        result = problem.answer(configs[0])
        strategy.tell(result)
        if result.status is Status.PRUNED:
            continue
        evaluations += 1
        if result.median_us is not None and result.median_us <= problem.target_us:
            return evaluations


def kt_evaluations_to_target(problem: Problem, strategy: str, seed: int,
                             workdir: Path) -> int | None:
    """The same score for a Kernel Tuner strategy in simulation mode."""
    import kernel_tuner

    names = [p.name for p in problem.space.params]
    tune = {p.name: list(p.values()) for p in problem.space.params}
    rows = [r for c, r in problem.table.items() if c in problem.space]
    cache = kernel_tuner_cache(rows, tune_params=tune, kernel_name="bench",
                               device_name="recorded", problem_size=[1])
    path = write_json(cache, workdir / f"{problem.name.replace('/', '_')}.json", overwrite=True)
    keys = set(cache["cache"])

    def recorded(params: dict[str, Any]) -> bool:  # KT parses lambda source; use a def
        return ",".join(str(params[k]) for k in names) in keys

    random.seed(seed)
    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            "bench", "__global__ void bench() {}", 1, [], tune, cache=str(path),
            simulation_mode=True, strategy=strategy, quiet=True, restrictions=recorded,
            strategy_options={"max_fevals": len(keys)})
    seen: set[str] = set()
    for entry in results:
        key = ",".join(str(entry[k]) for k in names)
        if key in seen:
            continue
        seen.add(key)
        value = entry.get("time")
        if isinstance(value, float) and value * 1000.0 <= problem.target_us:
            return len(seen)
    return None


def recorded_problems(shapes: Sequence[str] = (), dtypes: Sequence[str] = ()) -> list[Problem]:
    """Problems from every recording that exists (optionally only some shapes / dtypes)."""
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.engine.recording import load_recording, recording_paths

    problems: list[Problem] = []
    for folder_path in sorted((ROOT / "sample_kernels").iterdir()):
        paths = recording_paths(folder_path) if folder_path.is_dir() else []
        if not paths:
            continue
        folder = load_kernel_folder(folder_path)
        for path in paths:
            recording = load_recording(path)
            groups: dict[tuple[str, str], dict[Config, TrialResult]] = {}
            for trial in recording.trials:
                groups.setdefault((trial.shape, trial.dtype), {})[trial.config] = trial
            for (shape, dtype), table in sorted(groups.items()):
                if (shapes and shape not in shapes) or (dtypes and dtype not in dtypes):
                    continue
                if not any(r.status is Status.OK for r in table.values()):
                    continue
                try:
                    space = folder.space(shape, dtype)
                except Exception:  # the folder's template changed: fall back to the table
                    space = _space_of_table(table)
                problems.append(Problem(f"{folder.name}/{path.stem}/{shape}/{dtype}",
                                        f"recording {path.name}", space, table))
    return problems


def _space_of_table(table: Mapping[Config, TrialResult]) -> SearchSpace:
    names = sorted({k for c in table for k in c})
    params: list[Parameter] = [Choice(name=n, values_=tuple(sorted({c[n] for c in table},
                                                                  key=str))) for n in names]
    return SearchSpace(params)


def synthetic_problems() -> list[Problem]:
    """SYNTHETIC landscapes (not measurements) so the pipeline runs without recordings."""
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers_fake_runner import numeric_space, synthetic_result, synthetic_space

    from workbench.core.records import Candidate

    out = []
    for label, space in (("mixed", synthetic_space()), ("numeric", numeric_space())):
        for shape in ("s1", "s2"):
            table = {c: synthetic_result(Candidate(c, shape, "bf16")) for c in space}
            out.append(Problem(f"synthetic/{label}/{shape}", "synthetic (not a measurement)",
                               space, table))
    return out


def summarise(values: Sequence[int | None], size: int) -> dict[str, Any]:
    reached = [v for v in values if v is not None]
    # a run that never reaches the target is scored as the whole space (worst case)
    scored = [v if v is not None else size for v in values]
    return {"median": statistics.median(scored), "mean": round(statistics.fmean(scored), 2),
            "p90": float(np.percentile(scored, 90)), "reached": len(reached),
            "runs": len(values)}


def run(seeds: int, use_synthetic: bool, use_kt: bool, shapes: Sequence[str] = (),
        dtypes: Sequence[str] = (), strategies: Sequence[str] = OURS) -> dict[str, Any]:
    problems = recorded_problems(shapes, dtypes)
    if use_synthetic or not problems:
        problems += synthetic_problems()
    kt_status = "not requested"
    if use_kt:
        try:
            import kernel_tuner

            kt_status = f"kernel_tuner {kernel_tuner.__version__}, simulation mode"
        except ImportError as exc:
            kt_status = f"unavailable: {exc}"
            use_kt = False
    report: dict[str, Any] = {"tolerance": TOLERANCE, "seeds": seeds, "kernel_tuner": kt_status,
                              "problems": []}
    with tempfile.TemporaryDirectory() as tmp:
        for problem in problems:
            entry: dict[str, Any] = {"name": problem.name, "source": problem.source,
                                     "space_size": problem.space.size,
                                     "recorded_in_space": problem.recorded_in_space,
                                     "best_us": problem.best_us, "strategies": {}}
            numeric = all(p.is_numeric for p in problem.space.params)
            for name in strategies:
                if name == "cmaes" and not numeric:
                    entry["strategies"][name] = {"skipped": "categorical parameters"}
                    continue
                started = time.perf_counter()
                try:
                    values = [evaluations_to_target(problem, name, s) for s in range(seeds)]
                except Exception as exc:  # e.g. gp without torch: report, don't hide
                    entry["strategies"][name] = {"skipped": str(exc)}
                    continue
                entry["strategies"][name] = {**summarise(values, problem.recorded_in_space),
                                             "wall_s": round(time.perf_counter() - started, 2)}
            if use_kt:
                for name in KT_STRATEGIES:
                    started = time.perf_counter()
                    try:
                        values = [kt_evaluations_to_target(problem, name, s, Path(tmp))
                                  for s in range(seeds)]
                    except Exception as exc:
                        entry["strategies"]["kt:" + name] = {"skipped": f"{type(exc).__name__}: "
                                                                        f"{exc}"[:300]}
                        continue
                    entry["strategies"]["kt:" + name] = {
                        **summarise(values, problem.recorded_in_space),
                        "wall_s": round(time.perf_counter() - started, 2)}
            report["problems"].append(entry)
            print(f"done {problem.name}", file=sys.stderr)
    report["recommendation"] = recommend(report)
    return report


def recommend(report: Mapping[str, Any]) -> dict[str, Any]:
    """The built-in with the lowest mean over problems of (median evals / space size),
    preferring recordings over synthetic problems."""
    recorded = [p for p in report["problems"] if not p["source"].startswith("synthetic")]
    basis = recorded or report["problems"]
    scores: dict[str, list[float]] = {}
    for problem in basis:
        for name, stats in problem["strategies"].items():
            if name.startswith("kt:") or "median" not in stats or name == "exhaustive":
                continue
            scores.setdefault(name, []).append(stats["median"] / problem["recorded_in_space"])
    complete = {n: statistics.fmean(v) for n, v in scores.items() if len(v) == len(basis)}
    if not complete:
        return {"strategy": None, "basis": "nothing comparable"}
    best = min(complete, key=lambda n: complete[n])
    return {"strategy": best, "basis": "recordings" if recorded else "SYNTHETIC only",
            "mean_fraction_of_space": {n: round(v, 4) for n, v in sorted(complete.items())}}


def print_table(report: Mapping[str, Any], out: Callable[[str], None] = print) -> None:
    names: list[str] = []
    for problem in report["problems"]:
        for name in problem["strategies"]:
            if name not in names:
                names.append(name)
    out(f"evaluations to reach {report['tolerance']:.0%} of the optimum "
        f"(median over {report['seeds']} seeds; Kernel Tuner: {report['kernel_tuner']})")
    out(f"{'problem':44s} {'size':>5s} " + " ".join(f"{n[:11]:>11s}" for n in names))
    for problem in report["problems"]:
        cells = []
        for name in names:
            stats = problem["strategies"].get(name, {})
            cells.append(f"{stats['median']:>11g}" if "median" in stats else f"{'-':>11s}")
        out(f"{problem['name'][:44]:44s} {problem['recorded_in_space']:>5d} " + " ".join(cells))
    out(f"recommended default: {report['recommendation']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--no-kt", action="store_true")
    parser.add_argument("--shapes", nargs="*", default=[], help="only these shapes")
    parser.add_argument("--dtypes", nargs="*", default=[], help="only these dtypes")
    parser.add_argument("--strategies", nargs="*", default=list(OURS))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "strategies.json"))
    args = parser.parse_args()
    report = run(args.seeds, args.synthetic, not args.no_kt, args.shapes, args.dtypes,
                 args.strategies)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str) + "\n")
    print_table(report)


if __name__ == "__main__":
    main()
