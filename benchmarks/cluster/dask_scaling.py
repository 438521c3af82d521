"""Simulated scaling of the DaskRunner on CPU: 1, 2, 4, 8 workers (issue 20).

No GPU: each worker of a ``distributed.LocalCluster`` (one process each, offering GPU=1 as
a dask-cuda worker does) runs the synthetic runner held for ``--device-ms`` per candidate,
a stand-in for the time a measurement occupies its device. What this measures is the
runner's fan-out and the cluster's overhead, not kernels: configs/min against the ideal
``workers x 60 / device time``, for the search's batch size (``--batch`` per worker).

    python3 benchmarks/cluster/dask_scaling.py --out benchmarks/results/dask/scaling_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from workbench.core.hardware import get_device
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.records import Candidate
from workbench.engine.dask_runner import dask_runner
from workbench.testing.cluster_endpoints import PacedEndpoint, SyntheticEndpoint


def _run(workers: int, candidates: list[Candidate], folder: object, device_s: float,
         batch: int) -> dict[str, object]:
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.work-stealing": False}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=2, resources={"GPU": 1},
                               processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        endpoint = PacedEndpoint(SyntheticEndpoint(folder, folder.template),  # type: ignore[attr-defined, arg-type]
                                 device_s)
        runner = dask_runner(client, endpoint)
        began = time.perf_counter()
        step = batch * workers
        done = 0
        for i in range(0, len(candidates), step):
            done += sum(1 for _ in runner.measure(candidates[i:i + step]))
        wall_s = time.perf_counter() - began
    finally:
        client.close()
        cluster.close()
    per_min = done / wall_s * 60.0
    ideal = workers * 60.0 / device_s
    return {"workers": workers, "configs": done, "wall_s": round(wall_s, 2),
            "load_average_1min": round(os.getloadavg()[0], 1),
            "configs_per_min": round(per_min, 1), "ideal_configs_per_min": round(ideal, 1),
            "efficiency": round(per_min / ideal, 3)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--configs", type=int, default=192)
    parser.add_argument("--device-ms", type=float, default=100.0)
    parser.add_argument("--batch", type=int, default=16, help="candidates per worker per batch")
    parser.add_argument("--out", default="dask_scaling.json")
    args = parser.parse_args(argv)
    folder = load_kernel_folder(Path(__file__).resolve().parents[2] / "sample_kernels"
                                / "silu_and_mul")
    space = list(folder.space("decode", "bf16", get_device("h100_sxm")))
    candidates = [Candidate(c, "decode", "bf16") for c in space[:args.configs]]
    rows = []
    for workers in (int(w) for w in args.workers.split(",")):
        row = _run(workers, candidates, folder, args.device_ms / 1000.0, args.batch)
        rows.append(row)
        print(row, flush=True)
    base = rows[0]["configs_per_min"]
    for row in rows:
        row["speedup_vs_first"] = round(float(row["configs_per_min"]) / float(base), 2)  # type: ignore[arg-type]
    report = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "host": platform.node(),
              "cpus": os.cpu_count(), "device_ms_simulated": args.device_ms,
              "batch_per_worker": args.batch, "note": "synthetic runner, simulated device "
              "time; CPU workers of a LocalCluster: the runner's overhead, not a GPU result",
              "rows": rows}
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
