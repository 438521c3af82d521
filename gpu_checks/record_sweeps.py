"""Record exhaustive sweeps of the sample kernels on the local GPU (the GPU machine).

For every sample kernel, every shape in its kernel.toml and both bf16 and fp16: the
baseline, a device-to-device copy of the same bytes, and every config of the template's
space (failures included), measured by LocalRunner. Writes one recording per kernel,
``<out>/<kernel>.json`` (copy it to ``sample_kernels/<kernel>/recordings/<spec>-<date>.json``),
and prints the throughput with the compile / verify / time split.

    python gpu_checks/record_sweeps.py --out $OUT [--kernels silu_and_mul] [--budget-s 480]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, TrialResult  # noqa: E402
from workbench.engine.bench import BenchSettings, CopyTiming  # noqa: E402
from workbench.engine.recording import Recording, save_recording  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
DTYPES = ("bf16", "fp16")
#: Sweep settings: 0.1 s of timing at most per candidate, stop at 0.5 % RSE of the median.
SWEEP = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=400, max_time_s=0.1,
                      target_rse_pct=0.5, flush_l2=True, timeout_s=5.0, batch_reps=10)
MAX_SAMPLES = 400


def _slim(result: TrialResult) -> TrialResult:
    samples = result.extra.get("samples_us")
    if samples is None:
        return result
    extra = dict(result.extra)
    extra["samples_us"] = [round(float(x), 3) for x in samples[:MAX_SAMPLES]]
    from dataclasses import replace

    return replace(result, extra=extra)


def sweep_kernel(name: str, deadline: float, out: Path, date: str) -> dict:
    folder = load_kernel_folder(ROOT / "sample_kernels" / name)
    began = time.perf_counter()
    trials: list[TrialResult] = []
    baselines: list[TrialResult] = []
    copies: list[CopyTiming] = []
    complete = True
    with LocalRunner(folder, settings=SWEEP) as runner:
        for dtype in DTYPES:
            if dtype not in folder.dtypes:
                continue
            for shape in folder.shapes:
                if time.perf_counter() > deadline:
                    complete = False
                    break
                t0 = time.perf_counter()
                baselines.append(_slim(runner.baseline(shape, dtype)))
                copies.append(runner.copy_timing(shape, dtype))
                space = folder.space(shape, dtype, runner.device)
                candidates = [Candidate(c, shape, dtype) for c in space]
                n0 = len(trials)
                for result in runner.measure(candidates):
                    trials.append(_slim(result))
                ok = sum(1 for t in trials[n0:] if t.status.value == "ok")
                print(f"{name} {shape}/{dtype}: {len(candidates)} configs, {ok} ok, "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
        wall = time.perf_counter() - began
        st = runner.stats
        sweep = {
            "complete": complete, "configs": len(trials), "wall_s": round(wall, 2),
            "configs_per_min": round(60 * len(trials) / wall, 1) if wall else None,
            "compiled": st.compiled, "compile_wall_s": round(st.compile_wall_s, 2),
            "compile_cpu_s": round(st.compile_cpu_s, 2), "verified": st.verified,
            "verify_s": round(st.verify_s, 2), "timed": st.timed,
            "bench_s": round(st.bench_s, 2), "loads": st.loads, "load_s": round(st.load_s, 2),
            "reused": st.reused, "restarts": st.restarts,
            "recovery_s": [round(x, 2) for x in st.recovery_s],
            "status_counts": st.status_counts, "jobs": runner.jobs,
            "nvcc": runner.compiler.version.splitlines()[-1] if runner.compiler.version else "",
        }
        recording = Recording(kernel=folder.name,
                              template_sha256=folder.template.source_sha256,
                              device={**runner.facts, "spec": runner.device.key},
                              date=date, bench=SWEEP.to_dict(), copy=tuple(copies),
                              baseline=tuple(baselines), trials=tuple(trials), sweep=sweep)
        path = save_recording(recording, out / f"{name}.json")
    print(f"{name}: wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    print(json.dumps(sweep))
    return sweep


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--budget-s", type=float, default=480.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    date = dt.datetime.now(dt.UTC).date().isoformat()
    deadline = time.perf_counter() + args.budget_s
    summary = {}
    for name in args.kernels.split(","):
        summary[name] = sweep_kernel(name, deadline, args.out, date)
    (args.out / "sweep_summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
