"""Pause / Stop latency of the panel under load, in a real JupyterLab and Chromium, and the
browser tier run beside a CPU hog.

Runs ``tests/browser/test_panel_load.py`` ``--runs`` times in a row: each run starts a CPU
hog on every core, launches a replayed search at the recording's pace (as long as it would
run live), presses Pause, Resume and Stop with the mouse and measures, in the page, from
the press's input time stamp to the header showing the answer, and that at most the trial
in flight lands afterwards. With ``--tier N`` it then runs the whole browser tier
(``pytest -q -m browser -p no:cacheprovider tests/browser``) N times with ``--hog`` busy
processes beside it and records each run's outcome and duration (the load test inside adds
its own hog); each tier run's whole output is kept as a text log with the date, the commit
and the load average before, during (every 10 s) and after it, in
``benchmarks/results/panel/cpu/browser-tier-beside-cpu-hog-<UTC time>.txt``. Writes the
numbers in the results schema (benchmarks/results_schema.py) to
``benchmarks/results/panel/cpu/browser-tier-beside-cpu-hogs-<UTC time>.json`` with ``--tier``,
else ``latency-under-load-<UTC time>.json`` (the target is 1 s).

    python benchmarks/panel/bench_panel_latency.py [--runs 3] [--tier 3] [--hog 2]
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
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_schema import result_path, run_block, write_result  # noqa: E402

from workbench.core.write_policy import write_file  # noqa: E402

LOGS = ROOT / "benchmarks" / "results" / "panel" / "cpu"  # each tier run's whole output


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + (" (with uncommitted changes)" if dirty else "")


def _pytest(args: Sequence[str], env: dict[str, str],
            log_title: str = "") -> dict[str, Any]:
    """One pytest run: exit status, wall time, the summary line and the load before it; with
    ``log_title``, its whole output goes to a text log under results/cpu/ (named in "log")."""
    load_before, commit, started = os.getloadavg()[0], _commit(), datetime.now(UTC)
    samples: list[str] = []
    done_sampling = threading.Event()

    def sample() -> None:  # the load the tests ran under
        while not done_sampling.wait(10.0):
            samples.append(f"{datetime.now(UTC):%H:%M:%S} {_load()}")

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.monotonic()
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    try:
        done = subprocess.run([sys.executable, *command], env=env, cwd=ROOT,
                              capture_output=True, text=True, check=False)
    finally:
        done_sampling.set()
        sampler.join()
    wall_s = round(time.monotonic() - start, 1)
    lines = [ln for ln in done.stdout.splitlines()
             if re.search(r"\d+ (passed|failed|errors?)", ln)]
    out = {"pytest_exit": done.returncode, "wall_s": wall_s,
           "load_1min_before": round(load_before, 2), "summary": lines[-1] if lines else "",
           "failures": [ln for ln in done.stdout.splitlines()
                        if ln.startswith(("FAILED", "ERROR"))],
           "failure_tail": done.stdout[-3000:] if done.returncode else ""}
    if log_title:
        log = LOGS / f"browser-tier-beside-cpu-hog-{started:%Y-%m-%dT%H%M%SZ}.txt"
        write_file(LOGS, log, "\n".join([
            log_title,
            f"date (UTC): {started:%Y-%m-%d %H:%M:%S} to {datetime.now(UTC):%H:%M:%S}",
            f"commit: {commit}",
            f"CPUs: {os.cpu_count()} (shared with other work on this machine)",
            f"load average (1/5/15 min) at the start: {load_before:.2f} (1 min)",
            "load average during the run (every 10 s): " + "; ".join(samples),
            f"load average after: {_load()}",
            f"command: python3 {' '.join(command)}",
            f"exit status: {done.returncode}, wall time {wall_s:.0f} s",
            "", "--- output ---", done.stdout, done.stderr]), make_folders=True)
        out["log"] = str(log.relative_to(ROOT))
    return out


def _hog(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of the load test alone")
    ap.add_argument("--tier", type=int, default=0, help="runs of the whole browser tier")
    ap.add_argument("--hog", type=int, default=os.cpu_count() or 2,
                    help="busy processes beside the browser tier")
    ap.add_argument("--from-logs", nargs="*", default=None, metavar="LOG",
                    help="record the tier runs these logs (results/panel/cpu/browser-tier-"
                         "beside-cpu-hog-*.txt, in order) hold instead of running any: a "
                         "series cut off before its result file was written")
    args = ap.parse_args()
    started = datetime.now(UTC)
    if args.from_logs is not None:
        runs = [_run_from_log(Path(log), i + 1, args.hog) for i, log in enumerate(args.from_logs)]
        args.tier, args.runs = len(runs), 0
        _write(args, started, runs, [], [])
        return
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
                title = (f"browser tier beside {args.hog} CPU hog(s) (python3 -c 'while True: "
                         f"pass'), run {i + 1} of {args.tier} in a row")
                tier_runs.append({"run": i + 1, "hog_processes": args.hog,
                                  **_pytest(["-m", "browser", "tests/browser"], env, title)})
            finally:
                for proc in hog:
                    proc.kill()
                    proc.wait()
            print(tier_runs[-1])
            _write(args, started, tier_runs, load_runs, [])  # a cut-off series keeps its runs
        lines = Path(tmp) / "panel_latency.jsonl"
        clicks = ([json.loads(line) for line in lines.read_text().splitlines() if line]
                  if lines.exists() else [])
    _write(args, started, tier_runs, load_runs, clicks)


def _write(args: argparse.Namespace, started: datetime, tier_runs: list[dict[str, Any]],
           load_runs: list[dict[str, Any]], clicks: list[Any]) -> None:
    """The result file (rewritten after each tier run, so a cut-off series keeps its runs)."""
    doc = {"what": "press (the input's time stamp in the page) -> the header shows the answer, "
                   "with a CPU hog on every core; held = at most the trial in flight landed in "
                   "the 2.5 s after the answer; browser_tier_runs: the whole browser tier "
                   "run in a row beside --hog busy processes, each run's pass count",
           "target_s": 1.0,
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "passes_in_a_row": len(_passing_prefix(tier_runs)),
           "tier_runs_asked": args.tier,
           "clicks": clicks, "load_test_runs": load_runs, "browser_tier_runs": tier_runs}
    date = f"{started:%Y-%m-%dT%H%M%SZ}"
    what = "browser-tier-beside-cpu-hogs" if args.tier else "latency-under-load"
    command = ("python benchmarks/panel/bench_panel_latency.py "
               f"--runs {args.runs} --tier {args.tier} --hog {args.hog}")
    if args.from_logs is not None:  # the runs were made by --tier, cut off, and read back
        doc["recorded_from_logs"] = list(args.from_logs)
        command = ("python benchmarks/panel/bench_panel_latency.py "
                   f"--hog {args.hog} --from-logs " + " ".join(args.from_logs))
    out = write_result(result_path("panel", "cpu", what, date),
                       run_block("panel_browser_tier" if args.tier else "panel_latency",
                                 command, device="cpu: 2-core development machine",
                                 driver=None, cuda=None, date=date), doc, overwrite=True)
    print(f"wrote {out}", flush=True)


def _run_from_log(log: Path, run: int, hog: int) -> dict[str, Any]:
    """A tier run as :func:`_pytest` records it, read back from its log."""
    text = log.read_text(encoding="utf-8")
    status = re.search(r"^exit status: (-?\d+), wall time (\d+) s$", text, re.M)
    load = re.search(r"^load average .* at the start: ([\d.]+)", text, re.M)
    if status is None or load is None:
        raise ValueError(f"{log}: no exit status / load line (not a finished tier run's log)")
    output = text.split("--- output ---", 1)[1]
    lines = [ln for ln in output.splitlines() if re.search(r"\d+ (passed|failed|errors?)", ln)]
    return {"run": run, "hog_processes": hog, "pytest_exit": int(status.group(1)),
            "wall_s": float(status.group(2)), "load_1min_before": float(load.group(1)),
            "summary": lines[-1].strip("= ") if lines else "",
            "failures": [ln for ln in output.splitlines() if ln.startswith(("FAILED", "ERROR"))],
            "failure_tail": "", "log": str(log.resolve().relative_to(ROOT))}


def _passing_prefix(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs before the first that did not pass (exit status 0)."""
    passing: list[dict[str, Any]] = []
    for run in runs:
        if run["pytest_exit"] != 0:
            break
        passing.append(run)
    return passing


if __name__ == "__main__":
    main()
