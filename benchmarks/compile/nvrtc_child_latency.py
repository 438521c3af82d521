"""Seconds per NVRTC compile: in-process, a one-shot child per compile, a persistent child.

The same N distinct configs of one template (a seeded sample of its space for one shape and
dtype) are compiled by NVRTC three ways, interleaved config by config (the machine's load
varies), each into a work directory of its own (no cache):

- ``in_process``: the library loaded once in this process (the floor; the workbench never
  compiles this way, a generated source is compiled in a sandboxed child);
- ``one_shot``: the former path, ``python -I -S nvrtc_child.py REQUEST`` in the sandbox's
  launcher per compile (an interpreter start and a library load every time);
- ``persistent``: :func:`workbench.engine.nvrtc.run_nvrtc`, a child of the pool that loaded
  the library once and answers request after request (its first compile starts it and is
  reported apart).

    python benchmarks/compile/nvrtc_child_latency.py [--configs 20] \\
        [--kernel sample_kernels/silu_and_mul] [--shape decode] [--dtype bf16] \\
        [--device cpu] [--device-name "cpu: 2-core development machine (no GPU)"]

The result goes to benchmarks/results/compile/<device>/nvrtc-child-latency-<kernel>-<date>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import results_schema  # noqa: E402
from compile_rate import instances  # noqa: E402

from workbench.engine import nvrtc_child  # noqa: E402
from workbench.engine.compiler import Compiler  # noqa: E402
from workbench.engine.nvrtc import CHILD, CHILDREN, Nvrtc, nvrtc_options, run_nvrtc  # noqa: E402
from workbench.engine.sandbox import DEFAULT_LIMITS, RUN_PYTHON, run_sandboxed  # noqa: E402

PATHS = ("in_process", "one_shot", "persistent")
SOURCE, CUBIN, REQUEST = "source.cu", "kernel.cubin", "nvrtc.json"
TIMEOUT_S = 120.0
Compile = Callable[[Path], bool]  # compiles work/SOURCE to work/CUBIN; whether it did


def in_process(nvrtc: Nvrtc, options: list[str]) -> Compile:
    builtins = str(nvrtc.builtins) if nvrtc.builtins else None
    lib = nvrtc_child.load_library(str(nvrtc.library), builtins)

    def run(work: Path) -> bool:
        request = {"source": SOURCE, "options": _with_includes(nvrtc, options, work),
                   "cubin": CUBIN, "ptx": None}
        with contextlib.redirect_stdout(io.StringIO()):
            return nvrtc_child.compile_request(lib, request, work) == nvrtc_child.COMPILED
    return run


def one_shot(nvrtc: Nvrtc, options: list[str]) -> Compile:
    def run(work: Path) -> bool:
        request = {"library": str(nvrtc.library),
                   "builtins": str(nvrtc.builtins) if nvrtc.builtins else None,
                   "source": SOURCE, "options": _with_includes(nvrtc, options, work),
                   "cubin": CUBIN, "ptx": None}
        (work / REQUEST).write_text(json.dumps(request))
        done = run_sandboxed([RUN_PYTHON, str(CHILD), REQUEST], work, DEFAULT_LIMITS, TIMEOUT_S)
        return done.returncode == 0
    return run


def persistent(nvrtc: Nvrtc, options: list[str]) -> Compile:
    def run(work: Path) -> bool:
        done = run_nvrtc(nvrtc, options, work, source=SOURCE, cubin=CUBIN,
                         limits=DEFAULT_LIMITS, timeout_s=TIMEOUT_S)
        return done.returncode == 0 and not done.timed_out
    return run


def _with_includes(nvrtc: Nvrtc, options: list[str], work: Path) -> list[str]:
    return [*options, f"-I{work}", *(f"-I{d}" for d in nvrtc.include_dirs)]


def timed(compile_one: Compile, source: str, root: Path, name: str) -> float:
    """Wall seconds of one compile of ``source`` in a fresh folder under ``root``."""
    work = root / name
    work.mkdir()
    (work / SOURCE).write_text(source)
    started = time.perf_counter()
    ok = compile_one(work)
    elapsed = time.perf_counter() - started
    if not ok or not (work / CUBIN).is_file():
        raise SystemExit(f"{name}: the compile failed (see {work})")
    return elapsed


def row(times: list[float], skip_first: bool) -> dict[str, Any]:
    counted = times[1:] if skip_first else times
    return {"compiles": len(counted), "median_s": round(statistics.median(counted), 4),
            "min_s": round(min(counted), 4), "max_s": round(max(counted), 4),
            **({"first_s": round(times[0], 4)} if skip_first else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--kernel", default="sample_kernels/silu_and_mul")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="the results folder's device name")
    parser.add_argument("--device-name", default="cpu: 2-core development machine (no GPU)")
    args = parser.parse_args()

    folder = (Path.cwd() / args.kernel).resolve()
    sources = [i.source for i in instances(folder, args.shape, args.dtype, args.configs,
                                           args.seed)]
    compiler = Compiler(args.arch, nvrtc="all", include_dir=folder)
    nvrtc, options = compiler.backend, nvrtc_options(compiler.flags)
    if nvrtc is None or options is None:
        raise SystemExit("no libnvrtc of nvcc's release here (pip install nvidia-cuda-nvrtc)")
    paths = {"in_process": in_process(nvrtc, options), "one_shot": one_shot(nvrtc, options),
             "persistent": persistent(nvrtc, options)}
    times: dict[str, list[float]] = {name: [] for name in PATHS}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="nvrtc-latency-") as root:
        for index, source in enumerate(sources):
            for name in PATHS:
                times[name].append(timed(paths[name], source, Path(root), f"{name}-{index}"))
            print(index, {name: round(times[name][-1], 3) for name in PATHS}, flush=True)
    CHILDREN.close()
    rows = {name: row(times[name], skip_first=name == "persistent") for name in PATHS}
    rows["persistent"]["speedup_vs_one_shot"] = round(
        rows["one_shot"]["median_s"] / rows["persistent"]["median_s"], 2)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    command = ("python benchmarks/compile/nvrtc_child_latency.py " + " ".join(sys.argv[1:])
               ).strip()
    what = "nvrtc-child-latency-" + folder.name.replace("_", "-")
    path = results_schema.result_path("compile", args.device, what, date)
    results_schema.write_result(path, results_schema.run_block(
        "nvrtc_child_latency", command, device=args.device_name, driver=None, cuda=None,
        date=date),
        {"kernel": args.kernel, "shape": args.shape, "dtype": args.dtype, "arch": args.arch,
         "seed": args.seed, "compiler": compiler.version.splitlines()[-1],
         "machine": {"nproc": os.cpu_count(), "cpu": platform.processor()
                     or platform.machine(), "python": platform.python_version(),
                     "loadavg_1min_before": round(load_before, 2),
                     "loadavg_1min_after": round(os.getloadavg()[0], 2)},
         "paths": rows, "seconds": {name: [round(t, 4) for t in times[name]]
                                    for name in PATHS}}, overwrite=True)
    print(json.dumps(rows, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
