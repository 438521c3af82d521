"""Dask vs the direct runner on one GPU: configs/min and picks (issue 20).

The same fixed subset of a sample template's space is measured by the direct
``LocalRunner`` and by a ``DaskRunner`` over ``LocalCUDACluster`` with one GPU worker, in
the order given by ``--order`` (ABBA by default, so a drift of the machine shows). Each run
starts with a cold compile cache of its own, hands the runner batches of ``--batch``
candidates (as ``workbench tune`` does) and times the sweep from the first batch to the last
result; starting the runner (and the cluster) is timed apart. Where the time goes: each run
splits its time per config into the GPU worker's verify + timing time (the results'
``verify_s`` and ``bench_s``) and the rest, and records how long each batch waited for its
first result (compiles and dispatch). Written to ``--out`` as JSON
with every config's median, so that the picks and the per-config agreement can be compared.

    python3 benchmarks/cluster/dask_overhead.py --configs 96 --out $OUT/dask_overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate, Status, TrialResult
from workbench.engine.bench import BenchSettings


def _subset(space: Sequence[Any], count: int, seed: int) -> list[Any]:
    configs = list(space)
    picks = sorted(random.Random(seed).sample(range(len(configs)), min(count, len(configs))))
    return [configs[i] for i in picks]


def _open(which: str, folder: Any) -> Any:
    if which == "direct":
        from workbench.engine.runner import LocalRunner

        return LocalRunner(folder, settings=BenchSettings())
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint

    return open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()), "local",
                            gpus=1)


def _one_run(which: str, folder: Any, shape: str, dtype: str, candidates: list[Candidate],
             batch: int, cache: Path) -> dict[str, Any]:
    os.environ["WORKBENCH_CACHE_DIR"] = str(cache)  # before the cluster's workers start
    began = time.perf_counter()
    runner = _open(which, folder)
    start_s = time.perf_counter() - began
    try:
        baseline = runner.baseline(shape, dtype)
        swept = time.perf_counter()
        results: list[TrialResult] = []
        first_result_s: list[float] = []  # per batch: handed over -> first result back
        for i in range(0, len(candidates), batch):
            handed = time.perf_counter()
            for result in runner.measure(candidates[i:i + batch]):
                if len(first_result_s) * batch <= i:
                    first_result_s.append(time.perf_counter() - handed)
                results.append(result)
        sweep_s = time.perf_counter() - swept
        copies: dict[str, Any] = {}
        if which == "dask":
            copies = {label: (c.median_us if c else None)
                      for label, c in runner.copy_timings(shape, dtype).items()}
        else:
            copies = {"direct": runner.copy_timing(shape, dtype).median_us}
        description = runner.description
        cpus = (runner.client.run(lambda: len(os.sched_getaffinity(0))) if which == "dask"
                else {"driver": len(os.sched_getaffinity(0))})
    finally:
        runner.close()
    ok = sorted((r for r in results if r.status is Status.OK and r.median_us),
                key=lambda r: r.median_us or 0.0)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    # the GPU worker's own verify + timing time; the rest of the sweep is everything else
    # (compiles not hidden behind measurements, messages, scheduling, the driver)
    device_s = sum((r.verify_s or 0.0) + (r.bench_s or 0.0) for r in results)
    return {"runner": which, "description": description, "start_s": round(start_s, 2),
            "sweep_s": round(sweep_s, 2), "configs": len(results),
            "configs_per_min": round(len(results) / sweep_s * 60.0, 1),
            "ms_per_config": round(1000.0 * sweep_s / len(results), 2),
            "verify_and_time_ms_per_config": round(1000.0 * device_s / len(results), 2),
            "other_ms_per_config": round(1000.0 * (sweep_s - device_s) / len(results), 2),
            "first_result_ms_per_batch": [round(1000.0 * t, 1) for t in first_result_s],
            "status_counts": counts, "baseline_us": baseline.median_us,
            "copy_us_per_device": copies, "cpus_per_process": cpus,
            "top5": [{"config": dict(r.config), "median_us": r.median_us} for r in ok[:5]],
            "medians_us": {r.config.key(): r.median_us for r in ok},
            "workers": sorted({json.dumps(r.extra.get("worker"), sort_keys=True)
                               for r in results if r.extra.get("worker")})}


def _agreement(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    shared = sorted(set(a["medians_us"]) & set(b["medians_us"]))
    ratios = [b["medians_us"][k] / a["medians_us"][k] for k in shared]
    return {"pair": f"{a['runner']}->{b['runner']}", "configs": len(shared),
            "median_ratio": round(statistics.median(ratios), 4) if ratios else None,
            "ratio_p05_p95": ([round(sorted(ratios)[int(0.05 * (len(ratios) - 1))], 4),
                               round(sorted(ratios)[int(0.95 * (len(ratios) - 1))], 4)]
                              if ratios else None),
            "same_best": a["top5"][0]["config"] == b["top5"][0]["config"],
            "best_of_a_in_top5_of_b": a["top5"][0]["config"] in [t["config"]
                                                                 for t in b["top5"]]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="sample_kernels/silu_and_mul")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--configs", type=int, default=96)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--order", default="direct,dask,dask,direct")
    parser.add_argument("--out", default="dask_overhead.json")
    args = parser.parse_args(argv)
    folder = load_kernel_folder(args.kernel)
    from workbench.core.hardware import get_device

    space = folder.space(args.shape, args.dtype, get_device("h100_sxm"))
    configs = _subset(list(space), args.configs, args.seed)
    candidates = [Candidate(c, args.shape, args.dtype) for c in configs]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, which in enumerate(args.order.split(",")):
            run = _one_run(which, folder, args.shape, args.dtype, candidates, args.batch,
                           Path(tmp) / f"cache-{index}")
            runs.append(run)
            print(f"{which:7s} start {run['start_s']:6.1f} s  sweep {run['sweep_s']:6.1f} s  "
                  f"{run['configs_per_min']:7.1f} configs/min  best "
                  f"{run['top5'][0]['median_us'] if run['top5'] else None}  "
                  f"{run['status_counts']}  ms/config {run['ms_per_config']} (verify+time "
                  f"{run['verify_and_time_ms_per_config']}, other "
                  f"{run['other_ms_per_config']})  first result per batch (median ms) "
                  f"{statistics.median(run['first_result_ms_per_batch'])}", flush=True)
    by_kind: dict[str, list[float]] = {}
    for run in runs:
        by_kind.setdefault(run["runner"], []).append(run["configs_per_min"])
    summary = {k: round(statistics.mean(v), 1) for k, v in by_kind.items()}
    overhead = (round(100.0 * (1 - summary["dask"] / summary["direct"]), 1)
                if {"dask", "direct"} <= set(summary) else None)
    report = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
              "host": platform.node(), "kernel": folder.name, "shape": args.shape,
              "dtype": args.dtype, "configs": len(candidates), "batch": args.batch,
              "order": args.order, "configs_per_min_mean": summary,
              "dask_overhead_pct": overhead,
              "agreement": [_agreement(runs[0], r) for r in runs[1:]], "runs": runs}
    try:
        import pynvml

        pynvml.nvmlInit()
        report["driver"] = pynvml.nvmlSystemGetDriverVersion()
        report["device"] = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        report["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
    except Exception as exc:  # recorded, not fatal: the runs name their device too
        report["nvml_error"] = str(exc)
    from workbench.engine.compiler import Compiler

    report["nvcc"] = Compiler(get_device("h100_sxm").arch).version.splitlines()[-1]
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: report[k] for k in ("configs_per_min_mean", "dask_overhead_pct",
                                              "agreement")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
