"""Repeatability: the top configs of each committed recording measured again in fresh workers.

Two questions, one script (run on the GPU machine):

* ``--mode recording`` (default): the 5 fastest ok configs of the newest recording at each
  (shape, dtype) are measured again by a new LocalRunner (a new worker process, new random
  inputs, the recording's bench settings) and the medians compared. Target: within 1 %.
  Where the recording holds a confirmation of a config (an independent re-measurement after
  the sweep, ``record_sweeps.py --confirm``), that is the recorded value compared against:
  the sweep's own best medians are minima over thousands and read low. The difference from
  the sweep's median is reported beside it (``diff_sweep_pct``).
* ``--mode processes``: the same configs measured in ``--processes`` fresh workers for each
  timing method named in ``--methods`` (``tail6`` is the worker's protocol with the
  recording's timer, ``cupti`` the same with CUPTI; :data:`RETIRED_METHODS` lists the
  methods of earlier runs, no longer settings); for every config the spread between processes,
  max / min - 1 of the medians. This isolates between-process variation from any change
  since the recording.

    python benchmarks/timing/repeatability.py --out results.json [--shapes decode large]
    python benchmarks/timing/repeatability.py --mode processes --out ab.json --shapes odd decode
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config, TrialResult  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.recording import load_recording, recording_paths  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")
#: timing method name -> BenchSettings fields that differ from the recording's (the
#: protocol itself is fixed: workbench.engine.timing_loop)
METHODS: dict[str, dict[str, Any]] = {
    "tail6": {},  # the worker's protocol: read flush, gate, 8 placements, 6 tail repetitions
    # tail6 timed by CUPTI kernel durations; the event pairs of the same launches are kept,
    # so one run gives both timers' between-process spread ("cupti" and "cupti-events")
    "cupti": {"timer": "cupti"},
    # a fixed 400 repetitions each (to compare central estimators offline with --keep-samples)
    "cupti-400": {"timer": "cupti", "min_reps": 400, "max_reps": 400, "max_time_s": 2.0},
}

#: Methods of earlier runs whose knobs were research settings and left BenchSettings (their
#: results stay committed and tabled; this version cannot repeat them): timing windows
#: with and without 150 ms gaps (every window of an evaluation agreed), the occupancy
#: carveout, ungated / tail-less / single-placement batches and the zeroing flush (the A/B
#: runs that chose the protocol), and run 7's scattered placements (no measurable effect).
RETIRED_METHODS: dict[str, dict[str, Any]] = {
    "cupti-400w8g150": {"timer": "cupti", "min_reps": 400, "max_reps": 400,
                        "max_time_s": 2.0, "windows": 8, "window_gap_ms": 150.0},
    "cupti-400-occ": {"timer": "cupti", "min_reps": 400, "max_reps": 400, "max_time_s": 2.0,
                      "carveout": "occupancy"},
    "cupti-400w8": {"timer": "cupti", "min_reps": 400, "max_reps": 400, "max_time_s": 2.0,
                    "windows": 8},
    "read-gated-place8": {"tail_reps": 0},
    "read-gated": {"placements": 1, "tail_reps": 0},
    "write-ungated": {"flush_method": "write", "host_gate": False, "placements": 1,
                      "tail_reps": 0},
}


def _top(recording: Any, shape: str, dtype: str, top: int,
         defaults: Config | None = None) -> list[TrialResult]:
    """The ``top`` fastest ok trials; with ``defaults``, configs recorded before a knob was
    added get the knob's default (the value they were measured with)."""
    best = recording.fastest(shape, dtype, top)
    if defaults is not None:
        best = [replace(t, config=Config({**defaults, **t.config})) for t in best]
    return best


def _method_detail(result: TrialResult) -> dict[str, Any]:
    """The gate's SM clock, as earlier results wrote it."""
    method = result.method
    clock = method.sm_clock if method is not None else None
    return {"sm_clock_effective_mhz": None if clock is None else {
                "median": clock.median_mhz, "min": clock.min_mhz, "max": clock.max_mhz,
                "batches": clock.batches}}


def _in_order(runner: LocalRunner, candidates: list[Candidate], *,
              again: bool = False) -> list[TrialResult]:
    """The runner's results in the order of ``candidates``: ``measure`` yields each result
    when it is ready (compiles finish in any order), so position says nothing; the config
    does. (Before this, results were paired with configs by position, which mislabelled
    configs whenever compiles finished out of order.) ``again``: timed afresh under the
    search's condition, never recalled from an earlier call."""
    condition = runner.search_condition if again else None
    by_config = {r.config: r for r in runner.measure(candidates, condition=condition)}
    return [by_config[c.config] for c in candidates]


def _settings(recording: Any) -> BenchSettings:
    return BenchSettings.from_dict(dict(recording.bench)) if recording.bench else BenchSettings()


def against_recording(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    confirmations: dict[str, Any] = {}
    for name in args.kernels:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        recording = load_recording(recording_paths(folder.path)[-1])
        confirmations[name] = {k: v for k, v in recording.confirmation.items() if k != "bench"}
        with LocalRunner(folder, settings=_settings(recording), seed=12345) as runner:
            for shape in args.shapes:
                for dtype in args.dtypes:
                    ok = _top(recording, shape, dtype, args.top,
                              folder.template.default_config())
                    fresh = _in_order(runner, [Candidate(t.config, shape, dtype) for t in ok])
                    for before, after in zip(ok, fresh, strict=True):
                        rows.append(_recording_row(name, recording, before, after))
    within = [r for r in rows if abs(r.get("diff_pct", 100)) <= 1.0]
    within_sweep = [r for r in rows if abs(r.get("diff_sweep_pct", 100)) <= 1.0]
    print(f"within 1 %: {len(within)} of {len(rows)} (of the sweep's medians: "
          f"{len(within_sweep)})")
    return {"mode": "recording", "rows": rows, "within_1pct": len(within), "total": len(rows),
            "within_1pct_of_sweep": len(within_sweep), "confirmations": confirmations}


def _recording_row(name: str, recording: Any, before: TrialResult,
                   after: TrialResult) -> dict[str, Any]:
    """One config: the sweep's median, the recording's confirmation of it (if any) and the
    fresh worker's; ``diff_pct`` is against the confirmation where there is one."""
    assert before.timing is not None
    confirmed = recording.confirmed_result(before.config, before.shape, before.dtype)
    reference = confirmed.median_us if confirmed is not None and confirmed.median_us else None
    row: dict[str, Any] = {"kernel": name, "shape": before.shape, "dtype": before.dtype,
                           "config": dict(before.config),
                           "recorded_median_us": before.timing.median_us,
                           "confirmed_median_us": reference,
                           "status": after.status.value, "fresh_median_us": after.median_us}
    if after.median_us:
        row["diff_sweep_pct"] = 100 * (after.median_us / before.timing.median_us - 1)
        row["diff_pct"] = (100 * (after.median_us / reference - 1) if reference
                           else row["diff_sweep_pct"])
    print(f"{name:22s} {before.shape:7s} {before.dtype} sweep {before.timing.median_us:8.3f} "
          f"confirmed {reference or float('nan'):8.3f} -> "
          f"{after.median_us or float('nan'):8.3f} us "
          f"({row.get('diff_pct', float('nan')):+.2f} %, of the sweep's "
          f"{row.get('diff_sweep_pct', float('nan')):+.2f} %)", flush=True)
    return row


def between_processes(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    summary: dict[str, dict[str, Any]] = {}
    for name in args.kernels:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        recording = load_recording(recording_paths(folder.path)[-1])
        base = _settings(recording)
        defaults = folder.template.default_config()
        tops = {(shape, dtype): _top(recording, shape, dtype, args.top, defaults)
                for shape in args.shapes for dtype in args.dtypes}
        for method in args.methods:
            settings = BenchSettings.from_dict({**base.to_dict(), **METHODS[method]})
            medians: dict[tuple[str, str, int], list[float]] = {}
            event_medians: dict[tuple[str, str, int], list[float]] = {}
            detail: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
            # processes interleave methods' runs in time only across kernels; each process
            # is a new worker with new inputs (seed varies) measuring every case once
            for proc in range(args.processes):
                with LocalRunner(folder, settings=settings, seed=1000 + proc) as runner:
                    for repeat, ((shape, dtype), top) in [
                            (r, case) for r in range(args.repeats) for case in tops.items()]:
                        cands = [Candidate(t.config, shape, dtype) for t in top]
                        got = _in_order(runner, cands, again=bool(repeat))
                        for i, result in enumerate(got):
                            if repeat and result.median_us and result.timing:
                                detail[(shape, dtype, i)][-1].setdefault("repeats", []).append({
                                    "median_us": result.median_us,
                                    **_method_detail(result),
                                    "samples_us": list(result.samples_us)
                                    if args.keep_samples else []})
                                continue
                            if result.median_us and result.timing:
                                medians.setdefault((shape, dtype, i), []).append(result.median_us)
                                events = result.event_samples_us
                                if events:  # the same launches' event pairs, as a second timer
                                    event_medians.setdefault((shape, dtype, i), []).append(
                                        float(np.median(events)))
                                detail.setdefault((shape, dtype, i), []).append({
                                    "reps": result.timing.reps,
                                    "rse_median_pct": round(result.timing.rse_median_pct, 3),
                                    "sm_clock_mhz": result.timing.sm_clock_mhz,
                                    **_method_detail(result),
                                    "samples_us": list(result.samples_us[:1000])
                                    if i == 0 or args.keep_samples else [],
                                    "event_samples_us": list(result.event_samples_us)
                                    if args.keep_samples else []})
            timers = [(method, medians)]
            if event_medians:
                timers.append((f"{method}-events", event_medians))
            for label, per_config in timers:
                _spread_rows(rows, label, name, settings, tops, per_config,
                             detail if label == method else {})
    labels = list(dict.fromkeys(r["method"] for r in rows))
    for method in labels:
        _position_profile(method, [r for r in rows if r["method"] == method])
        spreads = [r["spread_pct"] for r in rows if r["method"] == method]
        if spreads:
            summary[method] = {"configs": len(spreads),
                               "within_1pct": sum(s <= 1.0 for s in spreads),
                               "max_spread_pct": max(spreads),
                               "median_spread_pct": sorted(spreads)[len(spreads) // 2]}
            print(f"{method}: {summary[method]}")
    return {"mode": "processes", "processes": args.processes, "rows": rows, "summary": summary}


def _spread_rows(rows: list[dict[str, Any]], method: str, name: str, settings: BenchSettings,
                 tops: dict[tuple[str, str], list[TrialResult]],
                 medians: dict[tuple[str, str, int], list[float]],
                 detail: dict[tuple[str, str, int], list[dict[str, Any]]]) -> None:
    """One row per config: its medians in each process and their spread (max / min - 1)."""
    for (shape, dtype, i), values in sorted(medians.items()):
        spread = 100 * (max(values) / min(values) - 1)
        rows.append({"kernel": name, "method": method, "batch_reps": settings.batch_reps,
                     "shape": shape, "dtype": dtype,
                     "rank": i, "config": dict(tops[(shape, dtype)][i].config),
                     "medians_us": [round(v, 3) for v in values],
                     "per_process": detail.get((shape, dtype, i), []),
                     "spread_pct": round(spread, 3)})
        print(f"{method:13s} {name:22s} {shape:7s} {dtype} #{i} "
              f"{' '.join(f'{v:8.2f}' for v in values)} us  spread {spread:5.2f} %",
              flush=True)


def _position_profile(method: str, rows: list[dict[str, Any]]) -> None:
    """Median time by position in the batch relative to the overall median (rank-0 samples):
    flat means the position of a repetition inside its batch does not bias it."""

    profiles = []
    for r in rows:
        for p in r["per_process"]:
            s = np.asarray(p["samples_us"], dtype=float)
            b = int(r["batch_reps"])
            n = s.size // b * b
            if n >= 2 * b:
                profiles.append(np.median(s[:n].reshape(-1, b), axis=0) / np.median(s))
    if profiles:
        prof = np.median(np.asarray(profiles), axis=0)
        print(f"{method}: median by position in batch / median: "
              f"{' '.join(f'{x:.3f}' for x in prof)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=["recording", "processes"], default="recording")
    ap.add_argument("--kernels", nargs="*", default=list(KERNELS))
    ap.add_argument("--shapes", nargs="*", default=["decode", "large"])
    ap.add_argument("--dtypes", nargs="*", default=["bf16"])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1,
                    help="measure every config this many times per process (within-process "
                         "spread; only the first counts for the between-process spread)")
    ap.add_argument("--keep-samples", action="store_true",
                    help="keep every config's samples (and event samples), not only rank 0's")
    ap.add_argument("--methods", nargs="*", default=["tail6", "cupti"],
                    choices=list(METHODS))
    args = ap.parse_args()
    doc = against_recording(args) if args.mode == "recording" else between_processes(args)
    doc = {"date": dt.date.today().isoformat(), **doc}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
