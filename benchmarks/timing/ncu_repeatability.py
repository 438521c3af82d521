"""Where does the between-process offset live: in the kernel, or around it?

For the fastest recorded config of each kernel at one (shape, dtype), in ``--processes``
fresh processes each:

* the workbench's timing (a new LocalRunner worker: CUDA events around each launch, L2
  evicted before every repetition) -> the median;
* Nsight Compute's ``gpu__time_duration.sum`` of ``--launches`` launches in a new process
  (``--cache-control all``: caches flushed before every profiled launch; ``--clock-control
  none``: clocks as they are) -> the median.

If the event medians move between processes and the ncu durations do not, the offset is in
what the events bracket besides the kernel (launch and completion), not in the kernel's own
execution. Run on the GPU machine:

    python benchmarks/timing/ncu_repeatability.py --out ncu_repeatability.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.compiler import Compiler  # noqa: E402
from workbench.engine.ncu import DRIVER, NCU_TIME_US, ncu_csv_rows, ncu_problem  # noqa: E402
from workbench.engine.recording import load_recording, recording_paths  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repeatability import KERNELS, _top  # noqa: E402


def ncu_durations_us(problem: dict[str, Any], entry: str, skip: int, count: int) -> list[float]:
    """Per-launch ``gpu__time_duration.sum`` in microseconds from one ncu process."""
    with tempfile.TemporaryDirectory(prefix="wb-ncu-rep-") as tmp:
        path = Path(tmp) / "problem.json"
        path.write_text(json.dumps({**problem, "launches": skip + count}))
        done = subprocess.run(
            [str(shutil.which("ncu")), "--csv", "--clock-control", "none", "--cache-control",
             "all", "--metrics", "gpu__time_duration.sum", "--kernel-name", entry,
             "--launch-skip", str(skip), "--launch-count", str(count), sys.executable,
             str(DRIVER), str(path)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ncu exited with {done.returncode}: {done.stderr[-400:]}")
    return [float(row["Metric Value"].replace(",", "")) * NCU_TIME_US[row["Metric Unit"].strip()]
            for row in ncu_csv_rows(done.stdout)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", nargs="*", default=list(KERNELS))
    ap.add_argument("--shape", default="decode")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--launches", type=int, default=40)
    args = ap.parse_args()
    compiler = Compiler("sm_90a")
    rows = []
    for name in args.kernels:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        recording = load_recording(recording_paths(folder.path)[-1])
        settings = BenchSettings.from_dict(dict(recording.bench or {}))
        best = _top(recording, args.shape, args.dtype, 1, folder.template.default_config())[0]
        compiled = compiler.compile(folder.template.render(best.config, args.dtype))
        assert compiled.cubin_path is not None, compiled.error_summary
        problem = ncu_problem(folder, folder.template, best.config, args.shape, args.dtype,
                              compiled.cubin_path)
        events: list[float] = []
        ncu: list[float] = []
        for proc in range(args.processes):
            with LocalRunner(folder, settings=settings, seed=500 + proc) as runner:
                result = next(iter(runner.measure([Candidate(best.config, args.shape,
                                                             args.dtype)])))
            if result.median_us is None:
                raise RuntimeError(f"{name}: {result.status.value} {result.reason}")
            events.append(result.median_us)
            durations = ncu_durations_us(problem, folder.template.entry, 2, args.launches)
            ncu.append(statistics.median(durations))
            print(f"{name:22s} process {proc}: events {result.median_us:.3f} us, "
                  f"ncu {ncu[-1]:.3f} us (min {min(durations):.3f}, n {len(durations)})",
                  flush=True)
        spread = {k: 100 * (max(v) / min(v) - 1) for k, v in (("events", events), ("ncu", ncu))}
        rows.append({"kernel": name, "shape": args.shape, "dtype": args.dtype,
                     "config": dict(best.config), "event_medians_us": events,
                     "ncu_medians_us": ncu, "spread_pct": spread})
        print(f"{name:22s} spread: events {spread['events']:.2f} %, ncu {spread['ncu']:.2f} %")
    Path(args.out).write_text(json.dumps({"date": dt.date.today().isoformat(),
                                          "processes": args.processes,
                                          "launches": args.launches, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
