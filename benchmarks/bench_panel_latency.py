"""Pause / Stop latency of the panel under load, in a real JupyterLab and Chromium, and the
browser tier run beside a CPU hog.

Runs ``tests/browser/test_panel_load.py`` ``--runs`` times in a row: each run starts a CPU
hog on every core, launches a replayed search at the recording's pace (as long as it would
run live), presses Pause, Resume and Stop with the mouse and measures, in the page, from
the press's input time stamp to the header showing the answer, and that at most the trial
in flight lands afterwards. With ``--tier N`` it then runs the whole browser tier
(``pytest -m browser``) N times with ``--hog`` busy processes beside it and records each
run's outcome and duration (the load test inside adds its own hog). Writes everything to
``benchmarks/results/panel_latency.json`` (the target is 1 s).

    python benchmarks/bench_panel_latency.py [--runs 3] [--tier 3] [--hog 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _pytest(args: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """One pytest run: exit status, wall time, the summary line and the load before it."""
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return {"pytest_exit": done.returncode, "wall_s": round(time.monotonic() - start, 1),
            "load_1min_before": round(load_before, 2), "summary": lines[-1] if lines else "",
            "failures": [ln for ln in done.stdout.splitlines() if ln.startswith("FAILED")],
            "failure_tail": done.stdout[-3000:] if done.returncode else ""}


def _hog(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of the load test alone")
    ap.add_argument("--tier", type=int, default=0, help="runs of the whole browser tier")
    ap.add_argument("--hog", type=int, default=os.cpu_count() or 2,
                    help="busy processes beside the browser tier")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "panel_latency.json"))
    args = ap.parse_args()
    load_runs: list[dict[str, Any]] = []
    tier_runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "WORKBENCH_ARTIFACTS": tmp, "WORKBENCH_REQUIRE_BROWSER": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        for i in range(args.runs):
            load_runs.append({"run": i + 1, **_pytest(
                [str(ROOT / "tests" / "browser" / "test_panel_load.py")], env)})
            print(load_runs[-1])
        for i in range(args.tier):
            hog = _hog(args.hog)
            try:
                tier_runs.append({"run": i + 1, "hog_processes": args.hog,
                                  **_pytest(["-m", "browser"], env)})
            finally:
                for proc in hog:
                    proc.kill()
                    proc.wait()
            print(tier_runs[-1])
        lines = Path(tmp) / "panel_latency.jsonl"
        clicks = ([json.loads(line) for line in lines.read_text().splitlines() if line]
                  if lines.exists() else [])
    doc = {"what": "press (the input's time stamp in the page) -> the header shows the answer, "
                   "with a CPU hog on every core; held = at most the trial in flight landed in "
                   "the 2.5 s after the answer",
           "target_s": 1.0, "date": time.strftime("%Y-%m-%d"),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "clicks": clicks, "load_test_runs": load_runs, "browser_tier_runs": tier_runs}
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
