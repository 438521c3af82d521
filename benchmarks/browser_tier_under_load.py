"""Run the browser tier with CPU hogs beside it and keep its whole output as a text log.

Usage: ``PYTHONPATH=$PWD python3 benchmarks/browser_tier_under_load.py [--hogs 2] [--runs 3]``

Each run starts ``--hogs`` busy-loop processes (``python3 -c "while True: pass"``), runs
``python3 -m pytest -q -m browser -p no:cacheprovider tests/browser`` and stops the hogs it
started (by their process ids). The log, ``benchmarks/results/cpu/browser-tier-hog-<UTC
time>.txt``, holds the date, the commit, the machine's CPU count, the load average before,
during (sampled every 10 s) and after, the pytest command's exit status and its full output.
A run that fails is kept like one that passes: the logs are the record.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cpu"
COMMAND = [sys.executable, "-m", "pytest", "-q", "-m", "browser", "-p", "no:cacheprovider",
           "tests/browser"]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def run_once(hogs: int, index: int, runs: int) -> tuple[int, Path]:
    """One browser-tier run beside ``hogs`` busy loops; returns (exit status, log path)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    log = RESULTS / f"browser-tier-hog-{started:%Y%m%dT%H%M%SZ}.txt"
    before, commit = _load(), _commit()
    hog_procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                 for _ in range(hogs)]
    samples: list[str] = []
    done = threading.Event()

    def sample() -> None:  # the load the tests ran under
        while not done.wait(10.0):
            samples.append(f"{datetime.now(UTC):%H:%M:%S} {_load()}")

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    try:
        proc = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        for hog in hog_procs:  # only the processes this script started
            hog.kill()
            hog.wait()
        done.set()
        sampler.join()
    wall_s = time.monotonic() - t0
    lines = [
        f"browser tier beside {hogs} CPU hog(s) (python3 -c 'while True: pass'), "
        f"run {index} of {runs}",
        f"date (UTC): {started:%Y-%m-%d %H:%M:%S} to {datetime.now(UTC):%H:%M:%S}",
        f"commit: {commit}",
        f"CPUs: {os.cpu_count()} (shared with other work on this machine)",
        f"load average (1/5/15 min) before the hogs: {before}",
        "load average during the run (every 10 s): " + "; ".join(samples),
        f"load average after: {_load()}",
        f"command: {' '.join(COMMAND[1:])} (python3 -m ...)",
        f"exit status: {proc.returncode}, wall time {wall_s:.0f} s",
        "", "--- output ---", proc.stdout, proc.stderr]
    log.write_text("\n".join(lines), encoding="utf-8")
    return proc.returncode, log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    worst = 0
    for i in range(1, args.runs + 1):
        status, log = run_once(args.hogs, i, args.runs)
        tail = log.read_text(encoding="utf-8").strip().splitlines()[-1]
        print(f"run {i}: exit {status}: {tail} ({log.relative_to(ROOT)})", flush=True)
        worst = worst or status
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
