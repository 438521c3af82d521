"""Pause / Stop latency of the panel under load, in a real JupyterLab and Chromium.

Runs ``tests/browser/test_panel_load.py`` ``--runs`` times in a row: each run starts a CPU
hog on every core, launches a replayed search at the recording's pace (as long as it would
run live), clicks Pause, Resume and Stop, and measures click -> the status showing it (polled
in the page every 50 ms), and that the progress then stops. Writes every run to
``benchmarks/results/panel_latency.json`` (the target is 1 s).

    python benchmarks/bench_panel_latency.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "panel_latency.json"))
    args = ap.parse_args()
    runs, outcomes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "WORKBENCH_ARTIFACTS": tmp, "WORKBENCH_REQUIRE_BROWSER": "1",
               "WORKBENCH_LOAD_TEST": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        for i in range(args.runs):
            load_before = os.getloadavg()[0]
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 str(ROOT / "tests" / "browser" / "test_panel_load.py")],
                env=env, cwd=ROOT, capture_output=True, text=True, check=False)
            outcomes.append({"run": i + 1, "pytest_exit": done.returncode,
                             "load_1min_before": round(load_before, 2),
                             "tail": done.stdout[-400:]})
            print(f"run {i + 1}: exit {done.returncode}")
        lines = (Path(tmp) / "panel_latency.jsonl")
        if lines.exists():
            runs = [json.loads(line) for line in lines.read_text().splitlines() if line]
    doc = {"what": "click -> status shown, with a CPU hog on every core (browser polled "
                   "every 50 ms); held = progress unchanged 1.5 s later",
           "target_s": 1.0, "date": time.strftime("%Y-%m-%d"),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "runs": runs, "pytest": outcomes}
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
