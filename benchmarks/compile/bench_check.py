"""Time of `workbench check` on the three sample folders, cold (empty cubin cache) and fully
cached. CPU only (nvcc); writes benchmarks/results/check_time.json.

    python benchmarks/compile/bench_check.py
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")


def timed_check(kernel: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "workbench.cli", "check", f"sample_kernels/{kernel}"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "WORKBENCH_CACHE_DIR": cache}
        for kernel in KERNELS:
            cold = timed_check(kernel, env)
            cached = sorted(timed_check(kernel, env) for _ in range(3))[1]
            rows.append({"kernel": kernel, "cold_s": round(cold, 2), "cached_s": round(cached, 2)})
            print(f"{kernel:24s} cold {cold:6.2f} s   cached {cached:5.2f} s (median of 3)")
    doc = {"date": dt.date.today().isoformat(), "nproc": os.cpu_count(),
           "python": platform.python_version(), "load_avg_1m": os.getloadavg()[0], "rows": rows}
    out = ROOT / "benchmarks" / "results" / "check_time.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
