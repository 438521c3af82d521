"""Multi-GPU tuning on one host through Dask (issue 21): scaling, picks, a killed worker.

Run on a machine with several GPUs (nvidia-h200-x2 or larger), after staging the wheels
(pycuda, dask, distributed, dask-cuda) as in gpu_checks/run_gpu.sh:

    python3 gpu_checks/multi_gpu_dask.py --gpus 1,2,4,8 --out $OUT/multi_gpu_dask.json

For each GPU count N (up to the GPUs visible) it tunes one sample template exhaustively
with a ``DaskRunner`` over ``LocalCUDACluster(N)`` (what ``workbench tune --cluster local
--gpus N`` does), each N into a fresh SQLite store and with a cold compile cache, and
records configs/min of the sweep, scaling efficiency against N=1, the best config, the
confirmed pick (finalists measured again on one device) and the copy roofline of every
device. Then, with the most GPUs, it runs the sweep again and kills one Dask worker with
SIGKILL when a third of the trials are stored, and checks that every config of the space
ends up stored exactly once (none lost, none twice) with what status.

Targets (issue 21): >= 1.8x throughput on 2 GPUs, >= 3.5x on 4; picks identical to N=1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Status
from workbench.engine.bench import BenchSettings
from workbench.engine.dask_cluster import open_dask_runner
from workbench.engine.dask_runner import DaskRunner
from workbench.engine.dask_tasks import LiveEndpoint, worker_pid
from workbench.engine.tuning import confirm_finalists
from workbench.search.budget import Budget, SearchConfig
from workbench.search.orchestrator import Search
from workbench.store.base import provenance_for
from workbench.store.sqlite import SQLiteStore


def _visible_gpus() -> int:
    import pynvml

    pynvml.nvmlInit()
    return int(pynvml.nvmlDeviceGetCount())


def _sweep(runner: DaskRunner, folder: Any, shape: str, dtype: str, store_path: Path,
           batch: int, on_stored: Any = None) -> tuple[Search, float]:
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
    return search, time.perf_counter() - began


def run_count(gpus: int, folder: Any, shape: str, dtype: str, work: Path,
              batch_per_gpu: int) -> dict[str, Any]:
    os.environ["WORKBENCH_CACHE_DIR"] = str(work / f"cache-{gpus}")  # cold, before workers
    began = time.perf_counter()
    runner = open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()), "local",
                              gpus=gpus)
    start_s = time.perf_counter() - began
    try:
        search, sweep_s = _sweep(runner, folder, shape, dtype, work / f"n{gpus}.sqlite",
                                 batch_per_gpu * gpus)
        results = search.results(shape)
        ok = sorted((r for r in results if r.status is Status.OK and r.median_us),
                    key=lambda r: r.median_us or 0.0)
        confirmed = confirm_finalists(runner.one_device(), ok[:5])  # finalists: one device
        pick = confirmed.chosen if not isinstance(confirmed, str) else None
        copies = {label: (c.median_us if c else None)
                  for label, c in runner.copy_timings(shape, dtype).items()}
        per_device: dict[str, int] = {}
        for r in results:
            worker = (r.extra or {}).get("worker") or {}
            label = f"{worker.get('host')} GPU {worker.get('gpu')}"
            per_device[label] = per_device.get(label, 0) + 1
        counts: dict[str, int] = {}
        for r in results:
            counts[r.status.value] = counts.get(r.status.value, 0) + 1
        return {"gpus": gpus, "description": runner.description, "start_s": round(start_s, 1),
                "sweep_s": round(sweep_s, 1), "configs": len(results),
                "configs_per_min": round(len(results) / sweep_s * 60.0, 1),
                "status_counts": counts, "per_device": per_device,
                "best_search": {"config": dict(ok[0].config), "median_us": ok[0].median_us}
                if ok else None,
                "confirmed_pick": {"config": dict(pick.config), "median_us": pick.median_us,
                                   "device": (pick.extra or {}).get("worker")}
                if pick else str(confirmed),
                "copy_us_per_device": copies}
    finally:
        runner.close()


def run_kill(gpus: int, folder: Any, shape: str, dtype: str, work: Path,
             batch_per_gpu: int) -> dict[str, Any]:
    os.environ["WORKBENCH_CACHE_DIR"] = str(work / "cache-kill")
    runner = open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()), "local",
                              gpus=gpus)
    space = folder.space(shape, dtype, runner.device)
    killed: dict[str, Any] = {}
    lock = threading.Lock()

    def maybe_kill(store: SQLiteStore) -> None:
        with lock:
            if killed or store.count_trials() < space.size // 3:
                return
            victim = runner.workers[-1].address
            pid = runner.client.run(worker_pid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.update(address=victim, pid=pid, at_trials=store.count_trials())

    try:
        _, sweep_s = _sweep(runner, folder, shape, dtype, work / "kill.sqlite",
                                 batch_per_gpu * gpus, on_stored=maybe_kill)
    finally:
        runner.close()
    store = SQLiteStore(work / "kill.sqlite")
    stored = store.trials(provenance_for(runner, folder.template), shape, dtype)
    keys = [t.result.config.key() for t in stored]
    counts: dict[str, int] = {}
    for t in stored:
        counts[t.result.status.value] = counts.get(t.result.status.value, 0) + 1
    return {"gpus": gpus, "killed": killed, "space": space.size, "stored": len(stored),
            "distinct": len(set(keys)), "lost": space.size - len(set(keys)),
            "status_counts": counts, "sweep_s": round(sweep_s, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="sample_kernels/silu_and_mul")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--gpus", default="1,2,4,8")
    parser.add_argument("--batch-per-gpu", type=int, default=16)
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument("--out", default="multi_gpu_dask.json")
    args = parser.parse_args(argv)
    folder = load_kernel_folder(args.kernel)
    visible = _visible_gpus()
    counts = [n for n in (int(g) for g in args.gpus.split(",")) if n <= visible]
    report: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "visible_gpus": visible, "kernel": folder.name,
                              "shape": args.shape, "dtype": args.dtype, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in counts:
            row = run_count(n, folder, args.shape, args.dtype, work, args.batch_per_gpu)
            report["runs"].append(row)
            print(json.dumps({k: row[k] for k in ("gpus", "sweep_s", "configs_per_min",
                                                   "per_device")}), flush=True)
            Path(args.out).write_text(json.dumps(report, indent=1, default=str))
        first = report["runs"][0]
        for row in report["runs"]:
            row["speedup"] = round(row["configs_per_min"] / first["configs_per_min"], 2)
            row["efficiency"] = round(row["speedup"] / row["gpus"], 2)
            pick, base = row["confirmed_pick"], first["confirmed_pick"]
            row["same_pick_as_1_gpu"] = (isinstance(pick, dict) and isinstance(base, dict)
                                         and pick["config"] == base["config"])
            row["same_search_best_as_1_gpu"] = (row["best_search"] or {}).get("config") == (
                first["best_search"] or {}).get("config")
        if not args.no_kill and counts[-1] > 1:
            report["kill"] = run_kill(counts[-1], folder, args.shape, args.dtype, work,
                                      args.batch_per_gpu)
            print(json.dumps(report["kill"]), flush=True)
    try:
        import pynvml

        pynvml.nvmlInit()
        report["driver"] = pynvml.nvmlSystemGetDriverVersion()
        report["device"] = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    except Exception as exc:
        report["nvml_error"] = str(exc)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
