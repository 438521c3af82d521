"""Record exhaustive sweeps of the sample kernels on the local GPU (the GPU machine).

For every sample kernel, every shape in its kernel.toml and both bf16 and fp16: the
baseline, a device-to-device copy of the same bytes, and every config of the template's
space (failures included), measured by LocalRunner. Writes one recording per kernel,
``<out>/<kernel>.json`` (copy it to ``sample_kernels/<kernel>/recordings/<spec>-<date>.json``),
and prints the throughput with the compile / verify / time split.

    python gpu_checks/record_sweeps.py --out $OUT [--kernels silu_and_mul] [--budget-s 480]

``--confirm`` measures the fastest configs of each (shape, dtype) of the newest committed
recordings again in a fresh worker with the recordings' settings, writes them into those
recordings (``confirmed``, ``confirmation``) and, small enough to bring back from the GPU
machine, to ``<out>/confirmed_<kernel>.json``; ``--merge-confirmed FILES`` writes such files
into the local recordings:

    python gpu_checks/record_sweeps.py --confirm --out $OUT [--top 5]
    python gpu_checks/record_sweeps.py --merge-confirmed out/confirmed_*.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config, TrialResult  # noqa: E402
from workbench.engine.bench import BenchSettings, CopyTiming  # noqa: E402
from workbench.engine.recording import (  # noqa: E402
    Recording,
    load_recording,
    recording_paths,
    save_recording,
)
from workbench.engine.runner import LocalRunner  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
DTYPES = ("bf16", "fp16")
#: Sweep settings: 0.1 s of timing at most per candidate, stop at 0.25 % RSE of the
#: (tick-aware) median, CUPTI kernel durations where libcupti loads. The tighter target:
#: replaying the H100's 400-repetition CUPTI samples through the stopping rule, 0.5 % left
#: 44 of 45 top configs within 1 % between fresh workers and 0.25 % all 45, at a mean of
#: 156 repetitions (benchmarks/notes/findings.md).
SWEEP = BenchSettings(warmup_ms=1.0, min_reps=10, max_reps=400, max_time_s=0.1,
                      target_rse_pct=0.25, flush_l2=True, timeout_s=5.0, batch_reps=10,
                      timer="auto")
MAX_SAMPLES = 400
KEEP_SAMPLES_FASTEST = 25
#: Per-repetition times of a result (typed fields): the timer's samples and, with CUPTI, the
#: event pairs of the same launches.
RAW_SAMPLES = ("samples_us", "event_samples_us")
SAMPLES_NOTE = (f"raw samples_us (and event_samples_us) kept for baselines, copies, the "
                f"template default and the {KEEP_SAMPLES_FASTEST} fastest ok configs of each "
                f"shape/dtype")


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


def _slim(result: TrialResult) -> TrialResult:
    """Smaller JSON, same measurements: times rounded to 1 ns (the GPU timer ticks every
    32 ns), durations to 0.1 ms, NVML detail dropped (the timing keeps clocks, temperature
    and the throttle flag), at most MAX_SAMPLES raw samples of each timer."""
    extra = {k: v for k, v in result.extra.items() if k != "nvml"}
    samples = {key: tuple(round(float(x), 3) for x in getattr(result, key)[:MAX_SAMPLES])
               for key in RAW_SAMPLES}
    timing = result.timing
    if timing is not None:
        timing = replace(timing, median_us=round(timing.median_us, 3),
                         min_us=round(timing.min_us, 3), q1_us=round(timing.q1_us, 3),
                         q3_us=round(timing.q3_us, 3), mean_us=round(timing.mean_us, 3),
                         rse_median_pct=round(timing.rse_median_pct, 3))
    err = result.max_abs_err
    return replace(result, timing=timing, extra=extra, **samples, compile_s=_r(result.compile_s, 4),
                   verify_s=_r(result.verify_s, 4), bench_s=_r(result.bench_s, 4),
                   max_abs_err=None if err is None else float(f"{err:.4g}"))


def keep_samples_of_fastest(trials: list[TrialResult], default: Config,
                            keep: int = KEEP_SAMPLES_FASTEST) -> list[TrialResult]:
    """Drop raw samples except for the ``keep`` fastest ok configs of each (shape, dtype)
    and the template's default config (the summary statistics stay for every config)."""
    fastest: dict[tuple[str, str], list[TrialResult]] = {}
    for t in trials:
        if t.timing is not None:
            fastest.setdefault((t.shape, t.dtype), []).append(t)
    kept: set[int] = set()
    for group in fastest.values():
        group.sort(key=lambda t: t.timing.median_us if t.timing else 0.0)
        kept.update(id(t) for t in group[:keep])
    out = []
    for t in trials:
        if id(t) not in kept and t.config != default and (t.samples_us or t.event_samples_us):
            t = replace(t, samples_us=(), event_samples_us=())
        out.append(t)
    return out


def reslim(path: Path) -> None:
    """Apply :func:`_slim` and :func:`keep_samples_of_fastest` to a recording in place."""
    rec = load_recording(path)
    folder = load_kernel_folder(ROOT / "sample_kernels" / rec.kernel)
    copies = tuple(replace(c, samples_us=tuple(round(x, 3) for x in c.samples_us))
                   for c in rec.copy)
    trials = keep_samples_of_fastest([_slim(t) for t in rec.trials],
                                     folder.template.default_config())
    sweep = {**rec.sweep, "samples_kept": SAMPLES_NOTE}
    save_recording(replace(rec, copy=copies, baseline=tuple(_slim(t) for t in rec.baseline),
                           trials=tuple(trials), sweep=sweep), path, overwrite=True)


def sweep_kernel(name: str, deadline: float, out: Path, date: str) -> dict:
    folder = load_kernel_folder(ROOT / "sample_kernels" / name)
    began = time.perf_counter()
    trials: list[TrialResult] = []
    baselines: list[TrialResult] = []
    copies: list[CopyTiming] = []
    complete = True
    with LocalRunner(folder, settings=SWEEP) as runner:
        print(f"{name}: timer {runner.timer_note}", flush=True)
        for dtype in DTYPES:
            if dtype not in folder.dtypes:
                continue
            for shape in folder.shapes:
                if time.perf_counter() > deadline:
                    complete = False
                    break
                t0 = time.perf_counter()
                baselines.append(_slim(runner.baseline(shape, dtype)))
                copy = runner.copy_timing(shape, dtype)
                copies.append(replace(copy, samples_us=tuple(round(x, 3) for x in copy.samples_us)))
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
            "samples_kept": SAMPLES_NOTE,
        }
        recording = Recording(kernel=folder.name,
                              template_sha256=folder.template.source_sha256,
                              device={**runner.facts, "spec": runner.device.key},
                              date=date, bench=runner.settings.to_dict(), copy=tuple(copies),
                              baseline=tuple(baselines),
                              trials=tuple(keep_samples_of_fastest(
                                  trials, folder.template.default_config())), sweep=sweep)
        path = save_recording(recording, out / f"{name}.json", overwrite=True)
    print(f"{name}: wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    print(json.dumps(sweep))
    return sweep


#: A fresh worker's inputs for the confirmation (the sweep's worker used seed 0).
CONFIRM_SEED = 777


def confirm_kernel(name: str, out: Path, top: int) -> Path:
    """Measure the ``top`` fastest configs of every (shape, dtype) of the newest recording
    again in a fresh worker with the recording's settings; store them in the recording."""
    folder = load_kernel_folder(ROOT / "sample_kernels" / name)
    path = recording_paths(folder.path)[-1]
    rec = load_recording(path)
    if rec.template_sha256 != folder.template.source_sha256:
        raise SystemExit(f"{path}: template_sha256 {rec.template_sha256[:12]} is not the "
                         f"template's ({folder.template.source_sha256[:12]}): re-record first")
    settings = BenchSettings.from_dict(dict(rec.bench))
    began = time.perf_counter()
    with LocalRunner(folder, settings=settings, seed=CONFIRM_SEED) as runner:
        if runner.device.key != rec.device.get("spec"):
            raise SystemExit(f"{path}: recorded on {rec.device.get('spec')}, this GPU is "
                             f"{runner.device.key}")
        if runner.settings.timer != settings.timer:
            raise SystemExit(f"{path}: recorded with timer {settings.timer}, this worker has "
                             f"{runner.timer_note}")
        groups = [(shape, dtype) for dtype in DTYPES if dtype in folder.dtypes
                  for shape in folder.shapes]
        finalists = [t for shape, dtype in groups for t in rec.fastest(shape, dtype, top)]
        asked = [Candidate(t.config, t.shape, t.dtype) for t in finalists]
        got = {(r.config, r.shape, r.dtype): _slim(r) for r in runner.measure(asked)}
        confirmed = tuple(got[(c.config, c.shape, c.dtype)] for c in asked)
        confirmation = {
            "date": dt.datetime.now(dt.UTC).date().isoformat(), "device": dict(runner.facts),
            "top": top, "seed": CONFIRM_SEED, "bench": runner.settings.to_dict(),
            "wall_s": round(time.perf_counter() - began, 1),
            "what": (f"the {top} fastest ok configs of each shape/dtype of this recording, "
                     f"measured again in a fresh worker (new inputs) with the recording's "
                     f"settings after the sweep: an estimate free of the sweep's selection")}
    for before, r in zip(finalists, confirmed, strict=True):
        print(f"{name:22s} {before.shape:7s} {before.dtype} sweep "
              f"{before.median_us or float('nan'):8.3f} -> {r.median_us or float('nan'):8.3f} "
              f"us {r.status.value}", flush=True)
    small = out / f"confirmed_{name}.json"
    small.write_text(json.dumps({"kernel": name, "template_sha256": rec.template_sha256,
                                 "recording": path.name, "confirmation": confirmation,
                                 "confirmed": [t.to_dict() for t in confirmed]}, indent=1))
    _write_confirmation(rec, path, confirmed, confirmation)
    return small


def merge_confirmed(source: Path) -> Path:
    """Write a ``confirmed_<kernel>.json`` into the recording it names (same template)."""
    doc = json.loads(source.read_text())
    folder = load_kernel_folder(ROOT / "sample_kernels" / doc["kernel"])
    path = folder.path / "recordings" / doc["recording"]
    rec = load_recording(path)
    if rec.template_sha256 != doc["template_sha256"]:
        raise SystemExit(f"{source}: measured for template {doc['template_sha256'][:12]}, "
                         f"{path} holds {rec.template_sha256[:12]}")
    confirmed = tuple(TrialResult.from_dict(t) for t in doc["confirmed"])
    return _write_confirmation(rec, path, confirmed, doc["confirmation"])


def _write_confirmation(rec: Recording, path: Path, confirmed: tuple[TrialResult, ...],
                        confirmation: dict) -> Path:
    save_recording(replace(rec, confirmed=confirmed, confirmation=confirmation), path,
                   overwrite=True)
    print(f"{path}: {len(confirmed)} confirmed measurements")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reslim", type=Path, nargs="*", default=[],
                        help="only shrink these existing recordings in place")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--budget-s", type=float, default=480.0)
    parser.add_argument("--confirm", action="store_true",
                        help="measure the newest recordings' fastest configs again (see above)")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--merge-confirmed", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.reslim:
        for path in args.reslim:
            reslim(path)
        return 0
    if args.merge_confirmed:
        for path in args.merge_confirmed:
            merge_confirmed(path)
        return 0
    if args.out is None:
        parser.error("--out is required")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.confirm:
        for name in args.kernels.split(","):
            confirm_kernel(name, args.out, args.top)
        return 0
    date = dt.datetime.now(dt.UTC).date().isoformat()
    deadline = time.perf_counter() + args.budget_s
    summary = {}
    for name in args.kernels.split(","):
        summary[name] = sweep_kernel(name, deadline, args.out, date)
    (args.out / "sweep_summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
