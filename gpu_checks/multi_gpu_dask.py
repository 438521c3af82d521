"""Multi-GPU tuning on one host through Dask: scaling, the condition pick, the CLI, a killed worker.

Run on a machine with 2 or more GPUs (nvidia-h100-x2 / nvidia-h200-x2, 4 and 8 when lent),
with the wheels staged (``../shared/device/stage.sh wheels app parse cluster``; carry
``[".device"]``) and the printed prefix before::

    python3 gpu_checks/multi_gpu_dask.py --gpus 1,2,4,8 --out $OUT/multi_gpu_dask.json

What it measures, each part written into the JSON as it ends (a run cut short keeps what
it has), with the device, driver, CUDA version and date:

1. ``sweeps``: for each GPU count N (up to the GPUs visible) an exhaustive sweep of one
   sample template (default fused_add_rmsnorm decode bf16, 1,184 configs) through the
   search loop with a ``DaskRunner`` over ``LocalCUDACluster(N)``, each into a fresh SQLite
   store with a cold compile cache: configs/min, speedup and scaling efficiency against
   N=1, configs per device, the compile-ahead queue's peak; then the finalists confirmed
   under the cache conditions on one pinned device (``build_report`` as ``workbench tune``
   does) and the pick compared with N=1's.
2. ``direct_pick``: the same stored trials of the largest N confirmed by the direct
   runner (``LocalRunner`` on GPU 0): its condition table and pick against the cluster's.
3. ``cli``: ``workbench tune --budget 256 --strategy random`` with ``--cluster local --gpus
   N`` (``--batch`` = N x 16, the batch following the GPU count) against the direct run,
   each with a fresh store and a cold cache: wall seconds, and whether each printed the
   four-condition table (no "cannot measure under cache conditions").
4. ``kill``: the sweep again on the most GPUs, one Dask worker SIGKILLed when a third of
   the trials are stored: every config of the space stored exactly once.

``--batch space`` (default) hands the sweep to the runner as one batch: the runner's
bounded compile-ahead queue (GPUs x 16 compiles ahead of the devices) keeps nvcc running
while the devices measure. ``--batch N`` hands N at a time, as ``workbench tune --batch``.
Targets (issue 29, 31): >= 1.8x on 2 GPUs, >= 3.5x on 4, >= 6.5x on 8; the cluster's pick
equal to the direct pick under the condition rule; the cluster beating the direct CLI run
at budget 256; nothing lost to a killed worker. ``--max-minutes`` (default 7.5) skips the
parts that no longer fit, saying so in the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.conditions import DEFAULT_CONDITIONS, condition_table  # noqa: E402
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder  # noqa: E402
from workbench.core.records import Status, TrialResult  # noqa: E402
from workbench.core.write_policy import write_file  # noqa: E402

CLI_BUDGET = 256
CONFIRM = 5


# -- pure parts (run anywhere; tests/test_multi_gpu_check.py) ------------------------------

def scaling(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each sweep row with ``speedup`` (configs/min over the first row's) and
    ``efficiency`` (speedup / GPUs relative to the first row's GPUs)."""
    if not rows:
        return []
    first = rows[0]
    out = []
    for row in rows:
        speedup = row["configs_per_min"] / first["configs_per_min"]
        out.append({**row, "speedup": round(speedup, 3),
                    "efficiency": round(speedup * first["gpus"] / row["gpus"], 3)})
    return out


def stored_once(space_keys: Sequence[str], stored_keys: Sequence[str]) -> dict[str, Any]:
    """Every config of the space stored exactly once: what was lost, what was stored twice,
    what was stored that the space does not hold."""
    counts: dict[str, int] = {}
    for key in stored_keys:
        counts[key] = counts.get(key, 0) + 1
    space = set(space_keys)
    return {"space": len(space), "stored": len(stored_keys), "distinct": len(counts),
            "lost": sorted(space - set(counts))[:20], "lost_count": len(space - set(counts)),
            "twice": sorted(k for k, n in counts.items() if n > 1)[:20],
            "foreign": sorted(set(counts) - space)[:20],
            "exactly_once": set(counts) == space and all(n == 1 for n in counts.values())}


def pick_summary(report: Any) -> dict[str, Any]:
    """The confirmed pick of a TuneReport, its condition tables and who measured it."""
    confirmation = report.confirmation
    if confirmation is None or confirmation.conditions is None:
        return {"pick": None, "why": report.confirm_note or "no condition confirmation",
                "notes": list(report.notes)}
    conds = confirmation.conditions
    workers = sorted({str((r.extra.get("worker") or {}).get("address", "direct"))
                      for r in conds.results})
    return {"pick": dict(conds.config), "holds": conds.holds,
            "rule": conds.selection.rule.describe(),
            "round1": condition_table(conds.selection),
            "round2": condition_table(conds.reported),
            "headline_us": confirmation.chosen.median_us,
            "speedup": report.speedup.speedup if report.speedup is not None else None,
            "measured_on": workers, "notes": list(report.notes)}


class Deadline:
    """The run's time budget: a part that no longer fits is skipped, saying so."""

    def __init__(self, minutes: float, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.ends = clock() + 60.0 * minutes

    def left_s(self) -> float:
        return self.ends - self.clock()

    def allows(self, needed_s: float) -> bool:
        return self.left_s() >= needed_s


# -- GPU parts ----------------------------------------------------------------------------

def _device_info() -> dict[str, Any]:
    info: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                            "host": platform.node(), "cpus": os.cpu_count()}
    try:
        import pynvml

        pynvml.nvmlInit()
        count = int(pynvml.nvmlDeviceGetCount())
        info["visible_gpus"] = count
        info["devices"] = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                           for i in range(count)]
        info["driver"] = pynvml.nvmlSystemGetDriverVersion()
        cuda = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        info["cuda"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
    except Exception as exc:  # the JSON says why instead
        info["nvml_error"] = str(exc)
        info.setdefault("visible_gpus", 0)
    return info


def _batch(arg: str, space_size: int) -> int:
    return space_size if arg == "space" else int(arg)


def _sweep(runner: Any, folder: KernelFolder, shape: str, dtype: str, store_path: Path,
           batch: int, on_stored: Any = None) -> tuple[Any, Any, float]:
    from workbench.search.budget import Budget, SearchConfig
    from workbench.search.orchestrator import Search
    from workbench.store.sqlite import SQLiteStore

    space = folder.space(shape, dtype, runner.device)
    config = SearchConfig(shapes=(shape,), dtype=dtype, strategy="exhaustive",
                          budget=Budget(max_evaluations=space.size), batch_size=batch)
    store = SQLiteStore(store_path)
    search = Search.for_template(folder, folder.template, runner, config, runner.device,
                                 store=store)
    if on_stored is not None:
        search.events.subscribe(lambda event: on_stored(store))
    began = time.perf_counter()
    search.run()
    return search, store, time.perf_counter() - began


def _confirm(runner: Any, folder: KernelFolder, shape: str, dtype: str,
             results: Sequence[TrialResult]) -> Any:
    from workbench.engine.tuning import build_report

    return build_report(folder.name, shape, dtype, runner, list(results), confirm=CONFIRM,
                        conditions=DEFAULT_CONDITIONS, template=folder.template,
                        env=folder.env(shape, dtype, runner.device))


def run_count(gpus: int, folder: KernelFolder, shape: str, dtype: str, work: Path,
              batch_arg: str) -> tuple[dict[str, Any], list[TrialResult]]:
    from workbench.engine.bench import BenchSettings
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint

    os.environ["WORKBENCH_CACHE_DIR"] = str(work / f"cache-{gpus}")  # cold, before workers
    began = time.perf_counter()
    runner = open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()), "local",
                              gpus=gpus)
    start_s = time.perf_counter() - began
    try:
        space = folder.space(shape, dtype, runner.device)
        batch = _batch(batch_arg, space.size)
        search, store, sweep_s = _sweep(runner, folder, shape, dtype,
                                        work / f"n{gpus}.sqlite", batch)
        results = search.results(shape)
        store.close()
        per_device: dict[str, int] = {}
        counts: dict[str, int] = {}
        for r in results:
            worker = (r.extra or {}).get("worker") or {}
            label = f"{worker.get('host')} GPU {worker.get('gpu')}"
            per_device[label] = per_device.get(label, 0) + 1
            counts[r.status.value] = counts.get(r.status.value, 0) + 1
        ok = sorted((r for r in results if r.status is Status.OK and r.median_us),
                    key=lambda r: r.median_us or 0.0)
        confirm_began = time.perf_counter()
        report = _confirm(runner, folder, shape, dtype, results)
        row = {"gpus": gpus, "description": runner.description, "batch": batch,
               "compile_limit": runner.compile_limit, "compile_peak": runner.compiles.peak,
               "start_s": round(start_s, 1), "sweep_s": round(sweep_s, 1),
               "configs": len(results),
               "configs_per_min": round(len(results) / sweep_s * 60.0, 1),
               "status_counts": counts, "per_device": per_device,
               "best_search": {"config": dict(ok[0].config), "median_us": ok[0].median_us}
               if ok else None,
               "confirmation_s": round(time.perf_counter() - confirm_began, 1),
               "confirmed": pick_summary(report)}
        return row, list(results)
    finally:
        runner.close()


def run_direct_pick(folder: KernelFolder, shape: str, dtype: str,
                    results: Sequence[TrialResult]) -> dict[str, Any]:
    from workbench.engine.bench import BenchSettings
    from workbench.engine.runner import LocalRunner

    began = time.perf_counter()
    with LocalRunner(folder, folder.template, BenchSettings()) as runner:
        report = _confirm(runner, folder, shape, dtype, results)
    return {"runner": runner.description, "seconds": round(time.perf_counter() - began, 1),
            "confirmed": pick_summary(report)}


def run_cli(gpus: int | None, folder: KernelFolder, shape: str, dtype: str,
            work: Path) -> dict[str, Any]:
    name = f"cli-{gpus or 'direct'}"
    command = [sys.executable, "-m", "workbench.cli", "tune", str(folder.path), "--shape",
               shape, "--dtype", dtype, "--strategy", "random", "--budget", str(CLI_BUDGET),
               "--store", str(work / f"{name}.sqlite")]
    if gpus is not None:
        command += ["--cluster", "local", "--gpus", str(gpus), "--batch", str(16 * gpus)]
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(work / f"cache-{name}")}
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400,
                          check=False)
    wall_s = time.perf_counter() - began
    out = done.stdout
    return {"command": " ".join(command[1:]), "rc": done.returncode,
            "wall_s": round(wall_s, 1),
            "condition_table": "round 2" in out and "cache conditions" in out,
            "says_cannot": "cannot measure under cache conditions" in out,
            "stdout_tail": out[-3000:], "stderr_tail": done.stderr[-1500:]}


def run_kill(gpus: int, folder: KernelFolder, shape: str, dtype: str, work: Path,
             batch_arg: str) -> dict[str, Any]:
    from workbench.engine.bench import BenchSettings
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint, worker_pid
    from workbench.store.base import provenance_for
    from workbench.store.sqlite import SQLiteStore

    os.environ["WORKBENCH_CACHE_DIR"] = str(work / "cache-kill")
    runner = open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()), "local",
                              gpus=gpus)
    space = folder.space(shape, dtype, runner.device)
    killed: dict[str, Any] = {}
    lock = threading.Lock()

    def maybe_kill(store: Any) -> None:
        with lock:
            if killed or store.count_trials() < space.size // 3:
                return
            victim = runner.workers[-1].address
            pid = runner.client.run(worker_pid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.update(address=victim, pid=pid, at_trials=store.count_trials())

    try:
        _, store, sweep_s = _sweep(runner, folder, shape, dtype, work / "kill.sqlite",
                                   _batch(batch_arg, space.size), on_stored=maybe_kill)
        store.close()
    finally:
        runner.close()
    store = SQLiteStore(work / "kill.sqlite")
    stored = store.trials(provenance_for(runner, folder.template), shape, dtype)
    counts: dict[str, int] = {}
    for t in stored:
        counts[t.result.status.value] = counts.get(t.result.status.value, 0) + 1
    store.close()
    check = stored_once([c.key() for c in space], [t.result.config.key() for t in stored])
    return {"gpus": gpus, "killed": killed, **check, "status_counts": counts,
            "sweep_s": round(sweep_s, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kernel", default="sample_kernels/fused_add_rmsnorm")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--gpus", default="1,2,4,8")
    parser.add_argument("--batch", default="space",
                        help="'space' (the sweep as one batch) or candidates per batch")
    parser.add_argument("--max-minutes", type=float, default=7.5)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: "
                        "direct_pick, cli, kill")
    parser.add_argument("--out", default=str(Path(os.environ.get("OUT", ".")) /
                                             "multi_gpu_dask.json"))
    parser.add_argument("--force", action="store_true", help="replace an existing --out")
    parser.add_argument("--plan", action="store_true",
                        help="print what would run (no GPU needed) and exit")
    args = parser.parse_args(argv)
    if args.batch != "space" and not args.batch.isdigit():
        parser.error("--batch takes 'space' or a positive integer")
    folder = load_kernel_folder(ROOT / args.kernel)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    deadline = Deadline(args.max_minutes)
    info = _device_info()
    visible = int(info.get("visible_gpus") or 0)
    counts = [n for n in (int(g) for g in args.gpus.split(",")) if n <= visible]
    if args.plan:
        print(json.dumps({"kernel": folder.name, "shape": args.shape, "dtype": args.dtype,
                          "gpu_counts": counts, "visible_gpus": visible,
                          "batch": args.batch, "skip": sorted(skip), "out": args.out,
                          "max_minutes": args.max_minutes}, indent=1))
        return 0
    if not counts:
        print(f"no GPU count of {args.gpus} fits the {visible} visible GPUs", file=sys.stderr)
        return 3
    out = Path(args.out)
    report: dict[str, Any] = {**info, "kernel": folder.name, "shape": args.shape,
                              "dtype": args.dtype, "batch": args.batch,
                              "command": " ".join(["python3", "gpu_checks/multi_gpu_dask.py",
                                                   *(argv or sys.argv[1:])]),
                              "sweeps": [], "skipped": []}

    if out.exists() and not args.force:
        print(f"{out} exists; pass --force to replace it", file=sys.stderr)
        return 2

    def save() -> None:  # rewritten after each part: this run's own file from here on
        write_file(out.parent, out, json.dumps(report, indent=1, default=str),
                   overwrite=True, make_folders=True)

    began = time.perf_counter()
    last: list[TrialResult] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows: list[dict[str, Any]] = []
        for n in counts:
            if rows and not deadline.allows(rows[0]["sweep_s"] * 1.2 / n + 60):
                report["skipped"].append(f"sweep on {n} GPUs: {deadline.left_s():.0f} s left")
                continue
            row, last = run_count(n, folder, args.shape, args.dtype, work, args.batch)
            rows.append(row)
            report["sweeps"] = scaling(rows)
            for r in report["sweeps"]:
                r["same_pick_as_first"] = (r["confirmed"].get("pick") is not None
                                           and r["confirmed"].get("pick")
                                           == rows[0]["confirmed"].get("pick"))
            print(json.dumps({k: report["sweeps"][-1][k] for k in (
                "gpus", "sweep_s", "configs_per_min", "speedup", "efficiency",
                "per_device", "compile_peak")}), flush=True)
            save()
        most = rows[-1]["gpus"] if rows else counts[0]
        if "direct_pick" not in skip and last and deadline.allows(60):
            direct = run_direct_pick(folder, args.shape, args.dtype, last)
            cluster_pick = rows[-1]["confirmed"].get("pick")
            direct["cluster_gpus"] = most
            direct["same_pick_as_cluster"] = (cluster_pick is not None
                                              and direct["confirmed"].get("pick")
                                              == cluster_pick)
            report["direct_pick"] = direct
            print(json.dumps({"direct_pick": direct["confirmed"].get("pick"),
                              "cluster_pick": cluster_pick}), flush=True)
            save()
        elif "direct_pick" not in skip:
            report["skipped"].append("direct_pick: out of time")
        if "cli" not in skip and most > 1 and deadline.allows(150):
            report["cli"] = {"direct": run_cli(None, folder, args.shape, args.dtype, work)}
            save()
            report["cli"]["cluster"] = run_cli(most, folder, args.shape, args.dtype, work)
            report["cli"]["cluster_faster"] = (report["cli"]["cluster"]["wall_s"]
                                               < report["cli"]["direct"]["wall_s"])
            print(json.dumps({k: {"wall_s": v["wall_s"], "rc": v["rc"],
                                  "condition_table": v["condition_table"]}
                              for k, v in report["cli"].items() if isinstance(v, dict)}),
                  flush=True)
            save()
        elif "cli" not in skip:
            report["skipped"].append("cli: one GPU or out of time")
        if "kill" not in skip and most > 1 and rows and deadline.allows(
                rows[-1]["sweep_s"] * 1.3 + 30):
            report["kill"] = run_kill(most, folder, args.shape, args.dtype, work, args.batch)
            print(json.dumps({k: report["kill"][k] for k in (
                "gpus", "space", "stored", "distinct", "lost_count", "exactly_once")}),
                flush=True)
        elif "kill" not in skip:
            report["skipped"].append("kill: one GPU or out of time")
    report["total_s"] = round(time.perf_counter() - began, 1)
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
