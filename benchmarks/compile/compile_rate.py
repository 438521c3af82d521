"""Configs compiled per minute: nvcc against NVRTC, over N configs of one template.

Each backend compiles the same N distinct configs (a seeded sample of the template's space
for one shape and dtype) with ``Compiler.compile_many`` and ``--workers`` workers, into a
fresh, empty cache folder, so every config is compiled. Backends (``WORKBENCH_NVRTC``
values, see workbench/engine/nvrtc.py): ``off`` (nvcc), ``all`` (NVRTC for every kernel)
and ``on`` (NVRTC where it gives nvcc's code: kernels without shared memory; the rest nvcc).
The one-time cost of finding the compilers (``nvcc --version``, ``nvcc -dryrun``, NVRTC's
version) is timed apart, and so is the start of the NVRTC child (``python -I -S``, the
library loaded, nothing compiled).

    python benchmarks/compile/compile_rate.py [--configs 24] [--workers 2] \\
        [--kernel sample_kernels/fused_add_rmsnorm] [--shape decode] [--dtype bf16] \\
        [--repeats 3] [--device cpu] \\
        [--device-name "cpu: 2-core development machine (no GPU)"]

The result goes to benchmarks/results/compile/<device>/compile-rate-<kernel>-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))

import results_schema  # noqa: E402

from workbench.core.kernel_folder.load import load_kernel_folder  # noqa: E402
from workbench.engine.compiler import Compiler  # noqa: E402
from workbench.engine.nvrtc import CHILD  # noqa: E402

BACKENDS = ("off", "all", "on")


def instances(folder: Path, shape: str, dtype: str, count: int, seed: int) -> list[Any]:
    kernel = load_kernel_folder(folder)
    space = kernel.space(shape, dtype)
    configs = space.sample(min(count, len(space)), seed)
    return [kernel.template.render(config, dtype) for config in configs]


def child_start_s(compiler: Compiler, repeats: int = 5) -> dict[str, float]:
    """Median wall seconds of a bare ``python -I -S`` and of the NVRTC child loading the
    library (``--version``)."""
    def median(command: list[str]) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    bare = median([sys.executable, "-I", "-S", "-c", "pass"])
    nvrtc = compiler.backend
    if nvrtc is None:
        return {"python_s": bare}
    command = [sys.executable, "-I", "-S", str(CHILD), "--version", str(nvrtc.library)]
    if nvrtc.builtins is not None:
        command.append(str(nvrtc.builtins))
    return {"python_s": bare, "child_with_library_s": median(command)}


def run_backend(mode: str, work: list[Any], folder: Path, arch: str, workers: int,
                ) -> dict[str, Any]:
    """One cold run of one backend: every config compiled into an empty cache."""
    with tempfile.TemporaryDirectory(prefix=f"compile-rate-{mode}-") as cache:
        compiler = Compiler(arch, cache_dir=cache, nvrtc=mode, include_dir=folder)
        started = time.perf_counter()
        version = compiler.version
        setup_s = time.perf_counter() - started
        started = time.perf_counter()
        results = list(compiler.compile_many(work, workers=workers))
        wall_s = time.perf_counter() - started
        start = child_start_s(compiler) if mode == "all" else {}
    by = Counter(r.compiler for r in results)
    return {"backend": mode, "compiler": version.splitlines()[-1], "workers": workers,
            "configs": len(results), "ok": sum(r.ok for r in results),
            "compiled_by": dict(sorted(by.items())), "setup_s": round(setup_s, 3),
            "wall_s": round(wall_s, 3),
            "median_compile_s": round(statistics.median(r.compile_s for r in results), 3),
            "peak_rss_mib": max(r.peak_rss_bytes for r in results) >> 20, **start}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A backend's repeats: the last run's facts, every wall time, the median rate."""
    walls = [r["wall_s"] for r in runs]
    median_wall = statistics.median(walls)
    return {**runs[-1], "wall_s": walls, "median_wall_s": round(median_wall, 3),
            "configs_per_min": round(60 * runs[-1]["configs"] / median_wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kernel", default="sample_kernels/fused_add_rmsnorm")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3,
                        help="cold runs per backend, interleaved (the machine's load varies)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--device", default="cpu", help="the results folder's device name")
    parser.add_argument("--device-name", default="cpu: 2-core development machine (no GPU)")
    args = parser.parse_args()

    folder = (Path.cwd() / args.kernel).resolve()
    work = instances(folder, args.shape, args.dtype, args.configs, args.seed)
    load_before = os.getloadavg()[0]
    modes = args.backends.split(",")
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for _ in range(args.repeats):
        for mode in modes:
            runs[mode].append(run_backend(mode, work, folder, args.arch, args.workers))
            print(runs[mode][-1], flush=True)
    rows = [summary(runs[mode]) for mode in modes]
    base = next((r for r in rows if r["backend"] == "off"), None)
    for row in rows:
        if base is not None:
            row["speedup_vs_nvcc"] = round(row["configs_per_min"] / base["configs_per_min"], 2)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    command = ("python benchmarks/compile/compile_rate.py " + " ".join(sys.argv[1:])).strip()
    what = "compile-rate-" + folder.name.replace("_", "-")
    path = results_schema.result_path("compile", args.device, what, date)
    results_schema.write_result(path, results_schema.run_block(
        "compile_rate", command, device=args.device_name, driver=None, cuda=None, date=date),
        {"kernel": args.kernel, "shape": args.shape, "dtype": args.dtype, "arch": args.arch,
         "seed": args.seed, "machine": {"nproc": os.cpu_count(), "cpu": platform.processor()
                                        or platform.machine(), "python": platform.python_version(),
                                        "loadavg_1min_before": round(load_before, 2),
                                        "loadavg_1min_after": round(os.getloadavg()[0], 2)},
         "rows": rows}, overwrite=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
