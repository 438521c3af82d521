"""Throughput against Kernel Tuner 1.5.0 on the same GPU, template and space, in one run.

The space: silu_and_mul at the decode shape (bf16), restricted to configs whose launched
block equals BLOCK_THREADS (Kernel Tuner takes the block from a parameter; our launch rule
caps it by the tile's work) and to FAST_EXP=0, UNROLL<=2, VEC_BYTES>=8, so both tuners
launch exactly the same kernels. Kernel Tuner injects the same #defines our renderer
writes (its params + SCALAR_T/ELEM_BYTES at the template's standalone defaults, bf16).

1. workbench: LocalRunner (parallel nvcc, isolated worker, 2 random input sets verified
   against the baseline, L2 flush before every repetition, stop at RSE(median) <= 0.5 %).
2. Kernel Tuner with its pycuda backend (iterations=7, no verification, no L2 flush),
   then its CuPy and cuda-python (NVRTC) backends.
3. Every tuner's best config re-measured by our harness (LocalRunner) in the same run.

    python benchmarks/search/kernel_tuner_compare.py --out results.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config, Status  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

SHAPE, DTYPE = "decode", "bf16"


def subspace(folder: Any) -> list[Config]:
    env = folder.env(SHAPE, DTYPE)
    out = []
    for c in folder.space(SHAPE, DTYPE):
        if c["FAST_EXP"] != 0 or c["UNROLL"] > 2 or c["VEC_BYTES"] < 8:
            continue
        if folder.template.launch_for(c, env).block[0] == c["BLOCK_THREADS"]:
            out.append(c)
    return out


def run_workbench(folder: Any, configs: list[Config]) -> dict[str, Any]:
    settings = BenchSettings()
    t0 = time.perf_counter()
    with LocalRunner(folder, settings=settings) as runner:
        t_ready = time.perf_counter()
        results = list(runner.measure([Candidate(c, SHAPE, DTYPE) for c in configs]))
        wall = time.perf_counter() - t_ready
        settings = runner.settings  # the timer resolved ("auto": CUPTI where libcupti loads)
    ok = [r for r in results if r.status is Status.OK and r.timing]
    best = min(ok, key=lambda r: r.timing.median_us) if ok else None  # type: ignore[union-attr]
    split = {k: float(sum(getattr(r, k) or 0.0 for r in results))
             for k in ("compile_s", "verify_s", "bench_s")}
    return {"configs": len(configs), "evaluated": len(results), "ok": len(ok),
            "statuses": {s.value: sum(r.status is s for r in results) for s in Status},
            "startup_s": t_ready - t0, "wall_s": wall,
            "configs_per_min": 60 * len(results) / wall, "split_s": split,
            "best_config": dict(best.config) if best else None,
            "best_median_us": best.timing.median_us if best and best.timing else None,
            "bench": settings.to_dict()}


def run_kernel_tuner(folder: Any, configs: list[Config], lang: str) -> dict[str, Any]:
    import kernel_tuner

    env = folder.env(SHAPE, DTYPE)
    tokens, d = env["tokens"], env["d"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((tokens, 2 * d)).astype(np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)  # bf16 by truncation: data, not zeros
    out = np.zeros((tokens, d), dtype=np.uint16)  # output buffer (written by the kernel)
    args = [out, bits, np.int32(tokens), np.int32(d)]
    names = [p.name for p in folder.template.params]
    tune_params = {n: sorted({c[n] for c in configs}) for n in names}
    allowed = {c.key() for c in configs}

    def restrict(p: dict[str, Any]) -> bool:
        return Config({n: int(p[n]) for n in names}).key() in allowed

    def grid(p: dict[str, Any]) -> tuple[int, int, int]:
        return folder.template.launch_for(Config({n: int(p[n]) for n in names}), env).grid

    t0 = time.perf_counter()
    results, _envinfo = kernel_tuner.tune_kernel(
        folder.template.entry, folder.template.source, grid, args, tune_params,
        grid_div_x=[], grid_div_y=[], grid_div_z=[], block_size_names=["BLOCK_THREADS"],
        restrictions=restrict, lang=lang, iterations=7, verbose=False, quiet=True,
        compiler_options=["-std=c++17"])
    wall = time.perf_counter() - t0
    valid = [r for r in results if isinstance(r.get("time"), float)]
    best = min(valid, key=lambda r: r["time"]) if valid else None
    return {"lang": lang, "evaluated": len(results), "valid": len(valid), "wall_s": wall,
            "configs_per_min": 60 * len(results) / wall,
            "best_config": {n: int(best[n]) for n in names} if best else None,
            "best_time_us": best["time"] * 1000 if best else None,
            "split_ms": {k: float(sum(r.get(k, 0) or 0 for r in results))
                         for k in ("compile_time", "verification_time", "benchmark_time",
                                   "framework_time", "strategy_time")}}


def remeasure(folder: Any, configs: dict[str, dict[str, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with LocalRunner(folder) as runner:
        base = runner.baseline(SHAPE, DTYPE)
        out["baseline_median_us"] = base.median_us
        for label, cfg in configs.items():
            r = next(runner.measure([Candidate(Config(cfg), SHAPE, DTYPE)]))
            out[label] = {"config": cfg, "status": r.status.value, "median_us": r.median_us}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--langs", nargs="*", default=["PYCUDA", "CUPY", "CUDA"])
    args = ap.parse_args()
    folder = load_kernel_folder(ROOT / "sample_kernels" / "silu_and_mul")
    configs = subspace(folder)
    doc: dict[str, Any] = {"date": dt.date.today().isoformat(), "kernel": folder.name,
                           "shape": SHAPE, "dtype": DTYPE, "space_size": len(configs)}
    print(f"space: {len(configs)} configs", flush=True)
    doc["workbench"] = run_workbench(folder, configs)
    print("workbench:", json.dumps({k: doc["workbench"][k] for k in
                                    ("evaluated", "wall_s", "configs_per_min", "split_s")}),
          flush=True)
    Path(args.out).write_text(json.dumps(doc, indent=1))
    doc["kernel_tuner"] = {}
    for lang in args.langs:
        try:
            doc["kernel_tuner"][lang] = run_kernel_tuner(folder, configs, lang)
        except Exception as exc:
            doc["kernel_tuner"][lang] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        print(f"kernel_tuner {lang}:", json.dumps(doc["kernel_tuner"][lang])[:400], flush=True)
        Path(args.out).write_text(json.dumps(doc, indent=1))
    bests = {"workbench": doc["workbench"]["best_config"]}
    for lang, r in doc["kernel_tuner"].items():
        if r.get("best_config"):
            bests[f"kernel_tuner {lang}"] = r["best_config"]
    doc["remeasured_by_workbench"] = remeasure(folder, {k: v for k, v in bests.items() if v})
    print("remeasured:", json.dumps(doc["remeasured_by_workbench"]), flush=True)
    Path(args.out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
