"""Benchmark: enumerate and filter search spaces of 10^5 to 10^7 raw points.

Run from the repository root:  python benchmarks/search/bench_space.py [--reps 5] [--no-write]

Each size is built from five parameters (ints, a power-of-two range, int and string
choices) and four constraints of the kinds kernel templates use (a product limit against a
device limit, divisibility of a problem size, a paired-parameter rule and a string/int
rule). Construction is timed end to end: it builds the mixed-radix index arrays, evaluates
every constraint vectorized on every raw point and keeps the feasible indices. Results are
written to benchmarks/results/space_enumeration.json with the machine's facts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from workbench.core.params import Choice, IntRange, Parameter, Pow2Range
from workbench.core.records import Config
from workbench.core.space import SearchSpace

RESULTS = Path(__file__).resolve().parent / "results" / "space_enumeration.json"
CONSTRAINTS = [
    "BLOCK * VEC <= max_threads_per_block * 4",
    "d % (VEC * ITEMS) == 0 or ITEMS == 1",
    "UNROLL <= ITEMS and ITEMS % UNROLL == 0",
    "LAYOUT == 'row' or VEC <= 4",
]
ENV = {"d": 11008, "max_threads_per_block": 1024}


def make_params(items: int, unroll: int) -> list[Parameter]:
    """5 parameters with 10 * 5 * 2 * items * unroll raw points."""
    return [
        IntRange("ITEMS", 1, items),
        Pow2Range("BLOCK", 1, 512),
        Choice("VEC", (1, 2, 4, 8, 16)),
        Choice("LAYOUT", ("row", "col")),
        IntRange("UNROLL", 1, unroll),
    ]


def time_call(fn: Callable[[], object], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    rows = []
    for items, unroll in ((10, 100), (100, 100), (200, 500)):
        params = make_params(items, unroll)
        space = SearchSpace(params, CONSTRAINTS, ENV)  # warm-up, and the object we inspect
        def build(p: list[Parameter] = params) -> object:
            return SearchSpace(p, CONSTRAINTS, ENV)

        first = min(space.size, 10_000)

        def iterate(s: SearchSpace = space, n: int = first) -> object:
            return [c for _, c in zip(range(n), s, strict=False)]

        def sample(s: SearchSpace = space) -> object:
            return s.sample(1000, seed=0)

        probe = space.sample(1, seed=0)[0]

        def neighbours(s: SearchSpace = space, c: Config = probe) -> object:
            return s.neighbours(c)

        build_s = time_call(build, args.reps)
        iterate_s = time_call(iterate, args.reps)
        sample_s = time_call(sample, args.reps)
        neighbours_s = time_call(neighbours, args.reps)
        rows.append({
            "raw_points": space.raw_size,
            "feasible_points": space.size,
            "constraints": len(space.constraints),
            "build_s_median": statistics.median(build_s),
            "build_s_min": min(build_s),
            "build_points_per_s": space.raw_size / statistics.median(build_s),
            "iterate_configs": first,
            "iterate_s_median": statistics.median(iterate_s),
            "sample_1000_s_median": statistics.median(sample_s),
            "neighbours_s_median": statistics.median(neighbours_s),
            "rejections_by_constraint": space.rejections_by_constraint(),
            "reps": args.reps,
        })

    result = {
        "benchmark": "space_enumeration",
        "what": "SearchSpace construction = enumerate every raw point and filter it by "
                "4 vectorized constraints; times are wall-clock seconds (median of reps)",
        "constraints": CONSTRAINTS,
        "env": ENV,
        "target": "<= 5 s for 10^6 raw points with ~4 constraints",
        "machine": {
            "nproc": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            # Other work on the machine slows these timings; the 1-minute load average at
            # the end of the run says how busy it was.
            "load_average_1min": round(os.getloadavg()[0], 2),
        },
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "results": rows,
    }

    print(f"{'raw points':>12} {'feasible':>10} {'build s':>9} {'Mpts/s':>8} "
          f"{'iter 10k s':>11} {'sample s':>9} {'neigh ms':>9}")
    for row in rows:
        print(f"{row['raw_points']:>12,} {row['feasible_points']:>10,} "
              f"{row['build_s_median']:>9.3f} {row['build_points_per_s'] / 1e6:>8.2f} "
              f"{row['iterate_s_median']:>11.3f} {row['sample_1000_s_median']:>9.4f} "
              f"{row['neighbours_s_median'] * 1e3:>9.3f}")
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS.name}")


if __name__ == "__main__":
    main()
