"""Where a multi-GPU sweep serialises, on CPU: 1 vs 2 simulated GPUs (issue 29 item 5).

The product's sweep (``Search`` over the template's space, the batch following the GPU
count, the next batch compiled ahead, every trial committed to a real SQLite store) with a
``DaskRunner`` over a ``distributed.LocalCluster`` of N worker processes offering ``GPU=1``,
each measuring with a :class:`~workbench.testing.paced_device.PacedDevice`: the device is
a sleep of ``--device-ms`` per config (plus ``--spin-up-ms`` after an idle gap over 50 ms,
the GPU worker's rule before it asked NVML), compiles are a fake nvcc that sleeps
``--compile-ms`` (the real Compiler around it: source check, hash, cache, cubin bytes).
Neither loads the CPU, so what this measures is the coordinator: the driver's search loop,
its store writes, the Dask client and scheduler, the workers' task overhead.

Per N: configs/min against the ideal ``N x 60 / device time``; the devices' busy share
and idle gaps (from each trial's ``extra["device"]``); the CPU seconds of each driver thread
per config (the search loop, Dask's event loop: scheduler and client); and the search
loop's profile (cProfile, top functions by own time).

    python3 benchmarks/cluster/coordinator_scaling.py --workers 1,2 --configs 512
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import json
import os
import platform
import pstats
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.results_schema import RESULTS, result_path, run_block  # noqa: E402
from workbench.core.write_policy import write_file  # noqa: E402

ARCH = "sm_90a"


# -- pure parts (tests/test_dask_coordinator_scaling.py) ---------------------------------------

def device_stats(devices: Sequence[Mapping[str, Any]], wall_s: float,
                 idle_gap_s: float = 0.05) -> dict[str, Any]:
    """Per worker: how long its simulated device was busy (and its share of ``wall_s``),
    how many spin-ups it paid, how many idle gaps passed ``idle_gap_s``, the median gap.
    ``devices``: each trial's ``extra["device"]`` with its ``worker``."""
    out: dict[str, Any] = {}
    by_worker: dict[str, list[Mapping[str, Any]]] = {}
    for d in devices:
        by_worker.setdefault(str(d.get("worker", "?")), []).append(d)
    for worker, rows in sorted(by_worker.items()):
        busy = sum(float(r["ended"]) - float(r["began"]) for r in rows)
        gaps = sorted(float(r["idle_s"]) for r in rows if r.get("idle_s") is not None)
        # a gap before a config of another batch than the one before it on this device
        ordered = sorted(rows, key=lambda r: float(r["began"]))
        pairs = list(itertools.pairwise(ordered))
        boundary = [float(b["began"]) - float(a["ended"]) for a, b in pairs
                    if _batch_of(a) != _batch_of(b)]
        within = [float(b["began"]) - float(a["ended"]) for a, b in pairs
                  if _batch_of(a) == _batch_of(b)]
        out[worker] = {
            "configs": len(rows), "busy_s": round(busy, 3),
            "busy_share": round(busy / wall_s, 3) if wall_s > 0 else None,
            "spin_ups": sum(1 for r in rows if float(r.get("spin_up_s") or 0.0) > 0),
            "gaps_over_idle": sum(1 for g in gaps if g > idle_gap_s),
            "median_gap_ms": round(1e3 * gaps[len(gaps) // 2], 2) if gaps else None,
            "p90_gap_ms": round(1e3 * gaps[int(0.9 * (len(gaps) - 1))], 2) if gaps else None,
            "batch_boundaries": len(boundary),
            "idle_at_boundaries_s": round(sum(boundary), 3),
            "idle_within_batches_s": round(sum(within), 3),
        }
    return out


def _batch_of(device: Mapping[str, Any]) -> str:
    """The batch token of a measure task's key (``wb-measure-<batch>-<index>``)."""
    parts = str(device.get("task", "")).split("-")
    return parts[2] if len(parts) >= 4 and parts[1] == "measure" else ""


def trial_phases_ms(results: Sequence[Any]) -> dict[str, float]:
    """Mean milliseconds per trial of each ``extra["phases_s"]`` entry (the measure task's
    plan, local compile, wait for its turn, finish and whole task) and of ``compile_s``."""
    sums: dict[str, list[float]] = {}
    for r in results:
        for key, value in ((r.extra or {}).get("phases_s") or {}).items():
            sums.setdefault(str(key), []).append(float(value))
        if r.compile_s is not None:
            sums.setdefault("compile_s", []).append(float(r.compile_s))
    return {k: round(1e3 * sum(v) / len(v), 2) for k, v in sorted(sums.items())}


def thread_cpu_s(stat_text: str, ticks_per_s: float) -> float:
    """user + system seconds of one thread from ``/proc/self/task/<tid>/stat``."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks_per_s  # utime, stime (fields 14, 15)


def top_functions(profile: pstats.Stats, count: int = 15) -> list[dict[str, Any]]:
    """The profile's functions with the most own time: name, calls, own and cumulative s."""
    rows = []
    for (path, line, name), (_, calls, own, cumulative, _) in profile.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(path).name}:{line}:{name}", "calls": calls,
                     "own_s": round(own, 3), "cumulative_s": round(cumulative, 3)})
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:count]


def cumulative_of(profile: pstats.Stats, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Calls and cumulative seconds of the functions called ``names`` (summed per name)."""
    out: dict[str, dict[str, Any]] = {}
    for (_, _, name), (_, calls, _, cumulative, _) in profile.stats.items():  # type: ignore[attr-defined]
        if name in names:
            row = out.setdefault(name, {"calls": 0, "cumulative_s": 0.0})
            row["calls"] += calls
            row["cumulative_s"] = round(row["cumulative_s"] + cumulative, 3)
    return out


# -- the run -----------------------------------------------------------------------------------

def _threads_cpu() -> dict[str, float]:
    ticks = float(os.sysconf("SC_CLK_TCK"))
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        tid = thread.native_id
        try:
            text = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:
            continue
        out[f"{thread.name}"] = out.get(thread.name, 0.0) + thread_cpu_s(text, ticks)
    return out


def run_count(workers: int, configs: int, args: argparse.Namespace, work: Path,
              ) -> dict[str, Any]:
    import dask
    from distributed import Client, LocalCluster

    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.search.budget import Budget, SearchConfig
    from workbench.search.orchestrator import Search, batch_for
    from workbench.store.sqlite import SQLiteStore
    from workbench.testing.paced_device import PacedDeviceEndpoint

    folder = load_kernel_folder(ROOT / args.kernel)
    os.environ["WORKBENCH_CACHE_DIR"] = str(work / f"cache-{workers}")  # cold per run
    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=args.threads_per_worker,
                               resources={"GPU": 1}, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        from workbench.engine.dask_runner import dask_runner

        endpoint = PacedDeviceEndpoint(folder, folder.template, ARCH,
                                       args.device_ms / 1e3, args.spin_up_ms / 1e3)
        runner = dask_runner(client, endpoint)
        space = folder.space(args.shape, args.dtype, runner.device)
        config = SearchConfig(shapes=(args.shape,), dtype=args.dtype, strategy="exhaustive",
                              budget=Budget(max_evaluations=min(configs, space.size)),
                              batch_size=batch_for(runner))
        store = SQLiteStore(work / f"n{workers}.sqlite")
        search = Search.for_template(folder, folder.template, runner, config, runner.device,
                                     store=store)
        cpu_before = _threads_cpu()
        profiler = cProfile.Profile()
        loop_profiler = cProfile.Profile() if args.profile_loop else None
        if loop_profiler is not None:  # enabled on Dask's event-loop thread itself
            _on_loop(client, loop_profiler.enable)
        began = time.perf_counter()
        profiler.enable()
        search.run()
        profiler.disable()
        wall_s = time.perf_counter() - began
        if loop_profiler is not None:
            _on_loop(client, loop_profiler.disable)
        cpu_after = _threads_cpu()
        results = search.results(args.shape)
        store.close()
    finally:
        client.close()
        cluster.close()
    devices = [{**(r.extra.get("device") or {}),
                "worker": (r.extra.get("worker") or {}).get("address", "?")}
               for r in results if r.extra.get("device")]
    done = len(results)
    per_min = done / wall_s * 60.0
    ideal = workers * 60.0 / (args.device_ms / 1e3)
    stats = pstats.Stats(profiler, stream=io.StringIO())
    cpu = {name: round(cpu_after.get(name, 0.0) - cpu_before.get(name, 0.0), 3)
           for name in cpu_after}
    return {"workers": workers, "batch": config.batch_size, "configs": done,
            "wall_s": round(wall_s, 2), "configs_per_min": round(per_min, 1),
            "ideal_configs_per_min": round(ideal, 1), "efficiency": round(per_min / ideal, 3),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "devices": device_stats(devices, wall_s),
            "trial_phases_ms": trial_phases_ms(results),
            "driver_cpu_s": {k: v for k, v in sorted(cpu.items()) if v > 0.005},
            "driver_cpu_ms_per_config": round(1e3 * sum(cpu.values()) / max(1, done), 2),
            "search_loop": cumulative_of(stats, (
                "record_trial", "claim_trials", "_plan", "_submit_measure",
                "_top_up_compiles", "compile_ahead", "instance", "wait", "split_pruned",
                "publish", "ask", "tell", "_compile_ahead", "measure")),
            "search_loop_top": top_functions(stats),
            **({"trace": devices} if args.trace else {}),
            **({"event_loop_top": top_functions(pstats.Stats(loop_profiler,
                                                              stream=io.StringIO()), 25)}
               if loop_profiler is not None else {})}


def _on_loop(client: Any, fn: Any) -> None:
    """Run ``fn`` on the client's event-loop thread (the scheduler's too, in a
    LocalCluster) and wait for it."""
    done = threading.Event()

    def call() -> None:
        fn()
        done.set()

    client.loop.add_callback(call)
    done.wait(30)


def _variant(args: argparse.Namespace) -> None:
    """The runner as it was before a fix, for an A/B in this process only (the driver's
    DaskRunner; the workers are untouched)."""
    from workbench.engine import dask_runner as module

    if args.queued_batches is not None:
        module.QUEUED_BATCHES = args.queued_batches
    if args.no_measure_ahead:
        module.DaskRunner._measure_ahead = lambda self, room: None  # type: ignore[method-assign]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kernel", default="sample_kernels/fused_add_rmsnorm")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--configs", type=int, default=512)
    parser.add_argument("--device-ms", type=float, default=40.0,
                        help="simulated device time per config (the H100's evaluate, "
                             "spin-up aside, was ~34 ms)")
    parser.add_argument("--spin-up-ms", type=float, default=0.0,
                        help="simulated spin-up after an idle gap over 50 ms (200: the rule "
                             "before NVML was asked)")
    parser.add_argument("--compile-ms", type=float, default=500.0)
    parser.add_argument("--threads-per-worker", type=int, default=20,
                        help="Dask threads per worker (16 cores per GPU + 4 measure slots "
                             "on the lent machines)")
    parser.add_argument("--queued-batches", type=int, default=None,
                        help="A/B only: the compile-ahead queue's bound in batches (the "
                             "runner's QUEUED_BATCHES; 1 was the bound before)")
    parser.add_argument("--no-measure-ahead", action="store_true",
                        help="A/B only: the devices drain at each batch's end (as before "
                             "the runner measured the next batch in the last slots)")
    parser.add_argument("--profile-loop", action="store_true",
                        help="cProfile Dask's event-loop thread (scheduler and client)")
    parser.add_argument("--trace", action="store_true",
                        help="keep every trial's device record (began, ended, task) per row")
    parser.add_argument("--out", default="", help="result file (default: under "
                        "benchmarks/results/cluster/cpu/)")
    args = parser.parse_args(argv)
    from workbench.core.kernel_folder import load_kernel_folder
    from workbench.testing.paced_device import fake_nvcc

    _variant(args)
    folder = load_kernel_folder(ROOT / args.kernel)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    command = " ".join(["python3", "benchmarks/cluster/coordinator_scaling.py",
                        *(sys.argv[1:] if argv is None else argv)])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        home = fake_nvcc(work, work / "cuda", args.compile_ms / 1e3, folder.template.entry,
                         ARCH)
        os.environ["CUDA_HOME"] = str(home)  # before the workers start: they inherit it
        for workers in (int(w) for w in args.workers.split(",")):
            row = run_count(workers, args.configs, args, work)
            rows.append(row)
            print(json.dumps({k: row[k] for k in (
                "workers", "batch", "wall_s", "configs_per_min", "ideal_configs_per_min",
                "efficiency", "driver_cpu_ms_per_config")}), flush=True)
    base = rows[0]["configs_per_min"]
    for row in rows:
        row["speedup_vs_first"] = round(row["configs_per_min"] / base, 3)
    report = {"run": run_block("coordinator_scaling", command,
                               device=f"cpu: {os.cpu_count()}-core host (no GPU)",
                               driver=None, cuda=None, date=stamp),
              "host": platform.node(), "cpus": os.cpu_count(),
              "kernel": folder.name, "device_ms": args.device_ms,
              "spin_up_ms": args.spin_up_ms, "compile_ms": args.compile_ms,
              "threads_per_worker": args.threads_per_worker,
              "queued_batches": args.queued_batches, "measure_ahead": not args.no_measure_ahead,
              "note": "simulated devices and compiles (sleeps): the coordinator's cost only",
              "rows": rows}
    what = "coordinator-scaling" + ("-one-batch-queued" if args.queued_batches == 1 else "") \
        + ("-no-measure-ahead" if args.no_measure_ahead else "")
    out = Path(args.out) if args.out else result_path("cluster", "cpu", what, stamp)
    root = RESULTS if out.resolve().is_relative_to(RESULTS) else out.resolve().parent
    write_file(root, out.resolve(), json.dumps(report, indent=1) + "\n", overwrite=True,
               make_folders=True)
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
