"""Which central estimate of a kernel's time repeats between fresh GPU workers (CPU only).

Reads a between-process run whose raw samples were kept (``repeatability.py --mode
processes --keep-samples``; committed: ``results/timing/h100/cupti-spread-run9-estimators-400-2026-11-22.json``, 400
CUPTI durations per config and worker, 3 workers, top 5 configs x 3 kernels x
odd/decode/large) and asks two questions of the same samples:

1. *Fixed repetitions*: with the first k samples of each worker, how often do the 3 workers'
   estimates of a config agree within 1 %, for the sample median, the tick-aware grouped
   median (:func:`workbench.engine.bench.grouped_median`) and the 25 % trimmed mean?
2. *The stopping rule*: replaying each worker's samples in batches of 10 through
   :func:`workbench.engine.bench.should_stop` (the worker's rule, tick-blind or tick-aware,
   at a 0.5 % or 0.25 % target), where does each stop, and do the workers then agree?

    python benchmarks/timing/estimators.py [--run results/timing/h100/cupti-spread-run9-estimators-400-2026-11-22.json]
        [--out results/timing/h100/tick-estimators-<date>.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.engine.bench import BenchSettings, median, should_stop  # noqa: E402

#: The H100's GPU timer step (measured by the worker's wb_tick kernel: 32.0 ns).
TICK_US = 0.032
RUN = (ROOT / "benchmarks" / "results" / "timing" / "h100"
       / "cupti-spread-run9-estimators-400-2026-11-22.json")


def trimmed_mean(samples: np.ndarray, cut: float = 0.25) -> float:
    """Mean of the middle half (the interquartile mean)."""
    arr = np.sort(samples)
    k = int(arr.size * cut)
    return float(arr[k:arr.size - k].mean())


ESTIMATORS: dict[str, Callable[[np.ndarray], float]] = {
    "sample median": lambda s: median(s),
    "grouped median (tick-aware)": lambda s: median(s, TICK_US),
    "25 % trimmed mean": trimmed_mean,
}


def spread_pct(values: list[float]) -> float:
    return 100.0 * (max(values) / min(values) - 1.0)


def _summary(spreads: list[float]) -> dict[str, Any]:
    arr = np.asarray(spreads)
    return {"configs": int(arr.size), "within_1pct": int((arr <= 1.0).sum()),
            "median_spread_pct": round(float(np.median(arr)), 3),
            "max_spread_pct": round(float(arr.max()), 3)}


def configs(doc: dict[str, Any], method: str) -> list[list[np.ndarray]]:
    """Per config, each worker's samples in the order they were taken."""
    out = []
    for row in doc["rows"]:
        if row["method"] == method:
            per = [np.asarray(p["samples_us"], dtype=np.float64) for p in row["per_process"]]
            if all(p.size for p in per):
                out.append(per)
    return out


def fixed_reps(cases: list[list[np.ndarray]], reps: list[int]) -> list[dict[str, Any]]:
    table = []
    for k in reps:
        for name, est in ESTIMATORS.items():
            spreads = [spread_pct([est(s[:k]) for s in workers]) for workers in cases]
            table.append({"reps": k, "estimator": name, **_summary(spreads)})
    return table


def replay_stopping(cases: list[list[np.ndarray]], batch: int = 10) -> list[dict[str, Any]]:
    table = []
    for target in (0.5, 0.25):
        settings = BenchSettings(min_reps=10, max_reps=400, max_time_s=1e9, timeout_s=2e9,
                                 target_rse_pct=target)
        for tick in (0.0, TICK_US):
            spreads, stops = [], []
            for workers in cases:
                estimates = []
                for s in workers:
                    n = batch
                    while n < s.size and not should_stop(s[:n], 0.0, settings, tick):
                        n += batch
                    stops.append(n)
                    estimates.append(median(s[:n], tick))
                spreads.append(spread_pct(estimates))
            table.append({"target_rse_pct": target,
                          "rule": "tick-aware" if tick else "tick-blind",
                          "mean_reps": round(float(np.mean(stops)), 1),
                          "median_reps": float(np.median(stops)), **_summary(spreads)})
    return table


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default=str(RUN))
    ap.add_argument("--method", default="cupti-400")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    doc = json.loads(Path(args.run).read_text())
    cases = configs(doc, args.method)
    fixed = fixed_reps(cases, [10, 20, 40, 80, 160, 400])
    stopping = replay_stopping(cases)
    for row in fixed + stopping:
        print(row)
    result = {"source": str(Path(args.run).relative_to(ROOT)) if Path(args.run).is_absolute()
              and ROOT in Path(args.run).parents else args.run,
              "method": args.method, "tick_us": TICK_US, "device": doc.get("device"),
              "date": doc.get("date"), "fixed_reps": fixed, "stopping_rule": stopping}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
