"""Compile throughput: 16 distinct kernel instances with 1 and 2 nvcc workers, and cached.

Each cold run uses a fresh, empty cache directory, so every instance runs nvcc; the cached
run repeats ``compile_many`` over a warm cache (no nvcc call). Results go to
benchmarks/results/compile_throughput.json and a table is printed.

    python benchmarks/compile/bench_compile.py [--repeats 3] [--arch sm_90a]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.engine.compiler import Compiler

RESULTS = Path(__file__).resolve().parent / "results" / "compile_throughput.json"

# A SwiGLU kernel in the shape the templates use: bf16 in, vectorized loads, one row per
# block-stride; BLOCK_THREADS and VEC vary, so every instance is a distinct compile.
TEMPLATE = """\
#include <cuda_bf16.h>
typedef SCALAR_T scalar_t;

__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
silu_and_mul_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ input, int d) {
  const int64_t row = blockIdx.x;
  const scalar_t* x = input + row * 2 * d;
  const scalar_t* y = x + d;
  scalar_t* o = out + row * d;
  for (int i = threadIdx.x * VEC; i < d; i += BLOCK_THREADS * VEC) {
    scalar_t xs[VEC], ys[VEC], os[VEC];
#pragma unroll
    for (int v = 0; v < VEC; ++v) { xs[v] = x[i + v]; ys[v] = y[i + v]; }
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
      os[v] = __float2bfloat16(silu(__bfloat162float(xs[v])) * __bfloat162float(ys[v]));
    }
#pragma unroll
    for (int v = 0; v < VEC; ++v) o[i + v] = os[v];
  }
}
"""


@dataclass(frozen=True)
class Instance:
    name: str
    entry: str
    source: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def instances() -> list[Instance]:
    out = []
    for block in (64, 128, 256, 512):
        for vec in (1, 2, 4, 8):
            head = (f"#define SCALAR_T __nv_bfloat16\n#define BLOCK_THREADS {block}\n"
                    f"#define VEC {vec}\n#line 1 \"template.cu\"\n")
            out.append(Instance("silu_and_mul", "silu_and_mul_kernel", head + TEMPLATE))
    return out


def timed_compile_many(compiler: Compiler, items: list[Instance], workers: int
                       ) -> tuple[float, list[float], int]:
    """Wall seconds for the batch, per-instance compile_s, and how many were cache hits."""
    started = time.perf_counter()
    results = list(compiler.compile_many(items, workers=workers))
    wall_s = time.perf_counter() - started
    failed = [r for r in results if not r.ok]
    if failed:
        raise SystemExit(f"{len(failed)} compiles failed: {failed[0].error_summary}")
    return wall_s, [r.compile_s for r in results], sum(r.cached for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--arch", default="sm_90a")
    args = parser.parse_args()

    items = instances()
    load_before = os.getloadavg()[0]
    assert len({i.hash for i in items}) == len(items)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as scratch:
        warm_dir = Path(scratch) / "warm"
        version = Compiler(args.arch, cache_dir=warm_dir).version
        for workers in (1, 2):
            walls, per_compile = [], []
            for repeat in range(args.repeats):
                cold_dir = Path(scratch) / f"cold-{workers}-{repeat}"
                compiler = Compiler(args.arch, cache_dir=cold_dir)
                wall_s, each, hits = timed_compile_many(compiler, items, workers)
                assert hits == 0, "a cold run hit the cache"
                walls.append(wall_s)
                per_compile.extend(each)
            rows.append({"mode": f"cold, {workers} worker{'s' if workers > 1 else ''}",
                         "workers": workers, "wall_s": walls,
                         "median_wall_s": statistics.median(walls),
                         "instances_per_s": len(items) / statistics.median(walls),
                         "median_compile_s": statistics.median(per_compile)})
        warm = Compiler(args.arch, cache_dir=warm_dir)
        timed_compile_many(warm, items, 2)  # fill the cache
        walls = []
        for _ in range(args.repeats):
            wall_s, _, hits = timed_compile_many(warm, items, 2)
            assert hits == len(items), "the cached run ran nvcc"
            walls.append(wall_s)
        rows.append({"mode": "cached, 2 workers", "workers": 2, "wall_s": walls,
                     "median_wall_s": statistics.median(walls),
                     "instances_per_s": len(items) / statistics.median(walls),
                     "median_compile_s": None})

    report = {
        "benchmark": "compile_throughput",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "cpu": _cpu_model(), "python": platform.python_version(),
                    "nvcc_version": version.splitlines()[-2] if version else "",
                    # other work on the machine slows the cold runs: the 1-minute load
                    # average before and after the benchmark says how much there was
                    "loadavg_1min_before": load_before,
                    "loadavg_1min_after": os.getloadavg()[0]},
        "arch": args.arch, "instances": len(items), "repeats": args.repeats,
        "kernel": "silu_and_mul (bf16), BLOCK_THREADS x VEC = 4 x 4 distinct instances",
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{len(items)} instances, arch {args.arch}, {os.cpu_count()} CPUs, "
          f"median of {args.repeats} runs; load average {load_before:.1f} before, "
          f"{report['machine']['loadavg_1min_after']:.1f} after")
    print(f"{'mode':<20} {'wall s':>8} {'inst/s':>8} {'per-compile s':>14}")
    for row in rows:
        per = f"{row['median_compile_s']:.3f}" if row["median_compile_s"] is not None else "-"
        print(f"{row['mode']:<20} {row['median_wall_s']:>8.3f} {row['instances_per_s']:>8.1f} "
              f"{per:>14}")
    print(f"wrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
