"""Multi-GPU tuning on one host through Dask: scaling, where the time goes, the condition
pick, the CLI, a killed worker.

Run on a machine with 2 or more GPUs (nvidia-h100-x2 / nvidia-h200-x2, 4 and 8 when lent),
with the wheels staged (``../shared/device/stage.sh wheels app parse cluster``; carry
``[".device"]``) and the printed prefix before::

    python3 gpu_checks/multi_gpu_dask.py --gpus 1,2

What it measures, each part written into the result as it ends (a run cut short keeps what
it has), with the device, driver, CUDA version and date, to
``$OUT/results/cluster/<device>/multi-gpu-dask-sweep-<date>.json`` in the schema of
``benchmarks/results_schema.py`` (copy it to ``benchmarks/results/cluster/<device>/``):

1. ``sweeps``: for each GPU count N (up to the GPUs visible) an exhaustive sweep of one
   sample template (default fused_add_rmsnorm decode bf16, 1,184 configs) through the
   search loop the product runs (``Search`` with :func:`~workbench.search.orchestrator.
   batch_for`: 16 per GPU worker, the next batch compiled while one is measured, in the
   runner's compile-ahead queue of two batches; 4 measure tasks running and 4 queued per
   GPU worker, the next batch's taking the room the batch's last candidates leave) with a
   ``DaskRunner`` over
   ``LocalCUDACluster(N)``, each into a fresh SQLite store with a cold compile cache, on
   ``--cores-per-gpu`` x N CPU cores (the lent machines have 16 per GPU: a 1-GPU row is the
   1-GPU machine): configs/min, speedup and scaling efficiency against N=1, configs per
   device, and where the time went (``phases``: the compile and measure tasks' summed
   seconds from Dask's task stream, the compiles' mean concurrency, the share of the sweep
   each device had a measure task running, the CPU cores' busy share from /proc/stat, and
   the stored trials' compile / verify / bench seconds; ``spin_up``: how many timings
   started at once on NVML's word that the clocks were warm, how many spun up and why,
   and the lowest SM clock the timing gate measured in those that did not); then the
   finalists confirmed under the cache conditions on one pinned device and the pick
   compared with N=1's.
2. ``direct_pick``: the same stored trials of the largest N confirmed by the direct
   runner (``LocalRunner`` on GPU 0): its condition table and pick against the cluster's.
3. ``cli``: ``workbench tune --budget 256 --strategy random`` with ``--cluster local --gpus
   N`` (no ``--batch``: the batch follows the GPU count) against the direct run, each with
   a fresh store and a cold cache: wall seconds, and whether each printed the
   four-condition table (no "cannot measure under cache conditions").
4. ``kill``: the sweep again on the most GPUs, one Dask worker SIGKILLed when a third of
   the trials are stored: every config of the space stored exactly once.
5. ``targets``: issue 29 item 5's checks from the above (true / false / null: not run).

The 2-GPU run for issue 29 (about 5 minutes; nvidia-h100-x2, or nvidia-h200-x2)::

    python3 gpu_checks/multi_gpu_dask.py --gpus 1,2 --max-minutes 7

A 1-GPU sweep's wall time varies a few per cent between runs on one machine, as much as the
effects chased here: ``--repeat 3`` runs the counts interleaved (1, 2, 1, 2, 1, 2), each
repeat's scaling against its own 1-GPU sweep, and the target reads their median.

``--batch auto`` (default) is the product's batch; ``space`` hands the sweep to the runner
as one batch (what the 2026-11-26 run did); ``N`` hands N at a time.
Targets (issue 29, 31): >= 1.8x on 2 GPUs, >= 3.5x on 4, >= 6.5x on 8; the cluster's pick
equal to the direct pick under the condition rule; the cluster beating the direct CLI run
at budget 256; nothing lost to a killed worker. ``--max-minutes`` (default 7.5) skips the
parts that no longer fit, saying so in the result.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_schema import (  # noqa: E402
    RESULTS,
    doc_problems,
    result_path,
    run_block,
)
from workbench.core.conditions import DEFAULT_CONDITIONS, condition_table  # noqa: E402
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder  # noqa: E402
from workbench.core.records import Status, TrialResult  # noqa: E402
from workbench.core.write_policy import write_file  # noqa: E402

CLI_BUDGET = 256
CONFIRM = 5


# -- pure parts (run anywhere; tests/test_multi_gpu_check.py) ------------------------------

def scaling(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each sweep row with ``speedup`` (configs/min over the first row's of its repeat, the
    row with the same ``repeat`` number, 0 when absent) and ``efficiency`` (speedup / GPUs
    relative to that row's GPUs)."""
    firsts: dict[int, Mapping[str, Any]] = {}
    out = []
    for row in rows:
        first = firsts.setdefault(int(row.get("repeat", 0)), row)
        speedup = row["configs_per_min"] / first["configs_per_min"]
        out.append({**row, "speedup": round(speedup, 3),
                    "efficiency": round(speedup * first["gpus"] / row["gpus"], 3)})
    return out


def median(values: Sequence[float]) -> float | None:
    """The middle value (the mean of the two middle ones for an even count); None: none."""
    return statistics.median(values) if values else None


def stored_once(space_keys: Sequence[str], stored_keys: Sequence[str]) -> dict[str, Any]:
    """Every config of the space stored exactly once: what was lost, what was stored twice,
    what was stored that the space does not hold."""
    counts: dict[str, int] = {}
    for key in stored_keys:
        counts[key] = counts.get(key, 0) + 1
    space = set(space_keys)
    return {"space": len(space), "stored": len(stored_keys), "distinct": len(counts),
            "lost": sorted(space - set(counts))[:20], "lost_count": len(space - set(counts)),
            "twice": sorted(k for k, n in counts.items() if n > 1)[:20],
            "foreign": sorted(set(counts) - space)[:20],
            "exactly_once": set(counts) == space and all(n == 1 for n in counts.values())}


def pick_summary(report: Any) -> dict[str, Any]:
    """The confirmed pick of a TuneReport, its condition tables and who measured it."""
    confirmation = report.confirmation
    if confirmation is None or confirmation.conditions is None:
        return {"pick": None, "why": report.confirm_note or "no condition confirmation",
                "notes": list(report.notes)}
    conds = confirmation.conditions
    workers = sorted({str((r.extra.get("worker") or {}).get("address", "direct"))
                      for r in conds.results})
    return {"pick": dict(conds.config), "holds": conds.holds,
            "rule": conds.selection.rule.describe(),
            "round1": condition_table(conds.selection),
            "round2": condition_table(conds.reported),
            "headline_us": confirmation.chosen.median_us,
            "speedup": report.speedup.speedup if report.speedup is not None else None,
            "measured_on": workers, "notes": list(report.notes)}


def task_phases(records: Sequence[Mapping[str, Any]], wall_s: float) -> dict[str, Any]:
    """Where a sweep's time went, from Dask's task stream (``get_task_stream().data``):
    per task kind (compile, measure, other) the count and summed compute seconds; the
    compiles' mean concurrency (summed seconds over the wall); per worker the union of its
    measure tasks' compute intervals and its share of the wall (the time that device had a
    measure task running: verify and time, and the wait for its turn on the runner)."""
    kinds: dict[str, dict[str, float]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        key = str(record.get("key", ""))
        kind = ("compile" if key.startswith("wb-compile-") else
                "measure" if key.startswith("wb-measure-") and "under" not in key
                else "other")
        computed = _compute_spans(record)
        row = kinds.setdefault(kind, {"count": 0, "compute_s": 0.0})
        row["count"] += 1
        row["compute_s"] += sum(b - a for a, b in computed)
        if kind == "measure":
            spans.setdefault(str(record.get("worker", "?")), []).extend(computed)
    out: dict[str, Any] = {k: {"count": int(v["count"]), "compute_s": round(v["compute_s"], 2),
                               "mean_s": round(v["compute_s"] / v["count"], 4)
                               if v["count"] else None}
                           for k, v in sorted(kinds.items())}
    if "compile" in kinds and wall_s > 0:
        out["compile_concurrency"] = round(kinds["compile"]["compute_s"] / wall_s, 2)
    busy = {worker: _union_s(intervals) for worker, intervals in sorted(spans.items())}
    out["measure_busy_s"] = {w: round(b, 2) for w, b in busy.items()}
    out["measure_busy_share"] = {w: round(b / wall_s, 3) if wall_s > 0 else None
                                 for w, b in busy.items()}
    return out


def idle_gaps(records: Sequence[Mapping[str, Any]], began: float, ended: float,
              min_gap_s: float = 0.002) -> dict[str, Any]:
    """Where each GPU worker had no measure task running, from Dask's task stream (worker
    clocks, ``time.time()``; ``began``/``ended``: the sweep's ends on the same clock).

    Each gap (longer than ``min_gap_s``) is filed once: ``head`` (before the worker's first
    measure), ``tail`` (after its last), ``boundary`` (the measures around it belong to two
    search batches: ``wb-measure-<batch>-<index>``), ``compiled_waiting`` (inside a batch,
    while at least one compile had finished whose measure had not started on any worker:
    the dispatch was late) or ``compile_starved`` (inside a batch, nothing compiled was
    waiting). Seconds and counts per kind, per worker."""
    compiles_done = sorted(
        max(b for _, b in spans) for r in records if (spans := _compute_spans(r))
        and str(r.get("key", "")).startswith("wb-compile-")
        and not str(r.get("key", "")).startswith("wb-compile-nvcc"))
    by_worker = _measure_rows(records)
    starts = sorted(start for rows in by_worker.values() for start, _, _ in rows)

    def backlog(t: float) -> int:
        return bisect.bisect_right(compiles_done, t) - bisect.bisect_right(starts, t)

    out: dict[str, Any] = {}
    for worker, rows in by_worker.items():
        gaps = [("head", rows[0][0] - began)]
        for end, start, before, after in _gaps(rows):
            gaps.append(("boundary" if _search_batch(after) != _search_batch(before) else
                         "compiled_waiting" if backlog(end) > 0 else "compile_starved",
                         start - end))
        gaps.append(("tail", ended - max(stop for _, stop, _ in rows)))
        out[worker] = _tally(gaps, ("head", "tail", "boundary", "compiled_waiting",
                                    "compile_starved"), min_gap_s)
    return out


def gap_causes(records: Sequence[Mapping[str, Any]], submits: Mapping[str, tuple[str, float]],
               min_gap_s: float = 0.002) -> dict[str, Any]:
    """Why each GPU worker's idle gaps (inside the sweep) ended when they did, from the
    measure task that ended each one: ``submits`` maps a measure key to its compile's key
    and the driver's ``time.time()`` when it submitted the task (:func:`trace_dispatch`).
    ``compile_late``: its compile finished after the gap began; ``dispatch_late``: compiled
    before, submitted by the driver after; ``start_late``: submitted before, started on
    the worker after (the scheduler's and the worker's latency). Seconds and counts."""
    compile_done = {str(r.get("key")): max(b for _, b in spans)
                    for r in records if (spans := _compute_spans(r))
                    and str(r.get("key", "")).startswith("wb-compile-")}
    out: dict[str, Any] = {}
    for worker, rows in _measure_rows(records).items():
        gaps = []
        for end, start, _, key in _gaps(rows):
            compile_key, submitted = submits.get(key, ("", float("nan")))
            done = compile_done.get(compile_key)
            gaps.append(("unknown" if done is None or submitted != submitted else
                         "compile_late" if done > end else
                         "dispatch_late" if submitted > end else "start_late", start - end))
        out[worker] = _tally(gaps, ("compile_late", "dispatch_late", "start_late", "unknown"),
                             min_gap_s)
    return out


def _measure_rows(records: Sequence[Mapping[str, Any]],
                  ) -> dict[str, list[tuple[float, float, str]]]:
    """Per worker (sorted), the sweep's measure tasks in start order: (first start, last
    stop, key); a confirmation's (``wb-measure-under-*``) left out."""
    rows: dict[str, list[tuple[float, float, str]]] = {}
    for record in records:
        key = str(record.get("key", ""))
        if key.startswith("wb-measure-") and "under" not in key and (
                spans := _compute_spans(record)):
            rows.setdefault(str(record.get("worker", "?")), []).append(
                (min(a for a, _ in spans), max(b for _, b in spans), key))
    return {worker: sorted(rows[worker]) for worker in sorted(rows)}


def _gaps(rows: Sequence[tuple[float, float, str]],
          ) -> Iterator[tuple[float, float, str, str]]:
    """Each stretch with no measure running between a worker's first and last: (its start,
    its end, the key of the measure that ended last before it, the key that ended it)."""
    end, last = rows[0][1], rows[0][2]
    for start, stop, key in rows[1:]:
        if start > end:
            yield end, start, last, key
        if stop > end:
            end, last = stop, key


def _search_batch(key: str) -> str:
    """The search batch of a ``wb-measure-<batch>-<index>`` key."""
    return key.split("-")[2] if key.count("-") >= 3 else "?"


def _tally(gaps: Sequence[tuple[str, float]], kinds: Sequence[str],
           min_gap_s: float) -> dict[str, dict[str, float]]:
    """Count and seconds of the gaps longer than ``min_gap_s``, per kind."""
    return {kind: {"count": sum(1 for k, g in gaps if k == kind and g > min_gap_s),
                   "s": round(sum(g for k, g in gaps if k == kind and g > min_gap_s), 3)}
            for kind in kinds}


@contextlib.contextmanager
def trace_dispatch(runner: Any) -> Iterator[dict[str, tuple[str, float]]]:
    """While open, each measure task the Dask runner submits is noted: its key -> (its
    compile's key, ``time.time()`` at submission). Instruments one runner instance."""
    submits: dict[str, tuple[str, float]] = {}
    inner = runner._submit_measure

    def noted(candidate: Any, artifact: Any, key: str, index: int) -> Any:
        submits[key] = (str(getattr(artifact, "key", "")), time.time())
        return inner(candidate, artifact, key, index)

    runner._submit_measure = noted
    try:
        yield submits
    finally:
        del runner._submit_measure


def _compute_spans(record: Mapping[str, Any]) -> list[tuple[float, float]]:
    spans = []
    for ss in record.get("startstops") or ():
        action, start, stop = ((ss.get("action"), ss.get("start"), ss.get("stop"))
                               if isinstance(ss, Mapping) else tuple(ss)[:3])
        if action == "compute" and start is not None and stop is not None:
            spans.append((float(start), float(stop)))
    return spans


def _union_s(intervals: Sequence[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def cpu_times(stat_text: str, cores: Sequence[int]) -> tuple[float, float]:
    """(busy, total) jiffies of ``cores`` from /proc/stat's text (busy: all but idle and
    iowait)."""
    wanted = {f"cpu{c}" for c in cores}
    busy = total = 0.0
    for line in stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] in wanted:
            values = [float(v) for v in fields[1:9]]
            total += sum(values)
            busy += sum(values) - values[3] - values[4]
    return busy, total


def cpu_busy_share(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    """The cores' busy share between two :func:`cpu_times` readings."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 3) if total > 0 else None


def cores_for(gpus: int, per_gpu: int, allowed: Sequence[int]) -> list[int]:
    """The CPU cores a sweep on ``gpus`` GPUs runs on: ``per_gpu`` per GPU (the first of
    ``allowed``), every allowed core when ``per_gpu`` is 0 or there are not enough."""
    cores = sorted(allowed)
    want = per_gpu * gpus
    return cores if per_gpu <= 0 or want >= len(cores) else cores[:want]


def trial_phases(results: Sequence[TrialResult]) -> dict[str, Any]:
    """The stored trials' own seconds: nvcc (``compile_s``, the cluster's compile task),
    verification and timing on the device, summed and per trial."""
    out: dict[str, Any] = {}
    for name in ("compile_s", "verify_s", "bench_s"):
        values = [float(v) for v in (getattr(r, name) for r in results) if v is not None]
        out[name] = {"sum": round(sum(values), 2), "count": len(values),
                     "mean": round(sum(values) / len(values), 4) if values else None}
    # extra["phases_s"]: the worker's, the pipe's and the Dask task's seconds per trial
    phases: dict[str, list[float]] = {}
    for r in results:
        for key, value in ((r.extra or {}).get("phases_s") or {}).items():
            phases.setdefault(str(key), []).append(float(value))
    if phases:
        out["phases_s"] = {k: {"sum": round(sum(v), 2), "count": len(v),
                               "mean": round(sum(v) / len(v), 4),
                               "nonzero": sum(1 for x in v if x > 0)}
                           for k, v in sorted(phases.items())}
    return out


def spin_up_summary(results: Sequence[TrialResult]) -> dict[str, Any]:
    """What preceded the sweep's timings (``extra["spin_up"]``, see
    :mod:`workbench.engine.spin_up`): how many timings per reason, how many spun up, were
    retimed after a cold start, and the SM clock NVML read when one started at once; and
    the trust check of the rule: for the timings that skipped the spin-up on NVML's word,
    the lowest SM clock their own gate measured (``method.sm_clock.min_mhz``) against the
    reference, and how many fell under the warm fraction (each of those was retimed, so
    none reached a result; many would mean NVML's reading lags)."""
    from workbench.engine.spin_up import WARM_CLOCK_FRACTION

    reasons: dict[str, int] = {}
    ran = retimed = 0
    seen_warm: list[float] = []
    gate_min_warm: list[float] = []
    reference: float | None = None
    for r in results:
        spin = (r.extra or {}).get("spin_up")
        if not isinstance(spin, Mapping):
            continue
        reason = str(spin.get("reason"))
        reasons[reason] = reasons.get(reason, 0) + 1
        ran += bool(spin.get("ran"))
        retimed += bool(spin.get("retimed"))
        reference = spin.get("reference_mhz") or reference
        if reason == "clock warm":
            if spin.get("sm_clock_mhz") is not None:
                seen_warm.append(float(spin["sm_clock_mhz"]))
            clock = r.method.sm_clock if r.method is not None else None
            if clock is not None:
                gate_min_warm.append(float(clock.min_mhz))
    floor = WARM_CLOCK_FRACTION * float(reference) if reference else None
    return {"timings": sum(reasons.values()), "by_reason": dict(sorted(reasons.items())),
            "spun_up": ran, "retimed": retimed, "reference_mhz": reference,
            "warm_nvml_mhz_min": min(seen_warm) if seen_warm else None,
            "warm_gate_mhz_min": min(gate_min_warm) if gate_min_warm else None,
            "warm_gate_under_fraction": (sum(1 for c in gate_min_warm if c < floor)
                                         if floor is not None else None)}


def targets(report: Mapping[str, Any]) -> dict[str, Any]:
    """Issue 29 item 5's targets, each true, false or None (not measured in this run)."""
    sweeps = report.get("sweeps") or []
    twos = [r for r in sweeps if r.get("gpus") == 2 and any(
        f.get("gpus") == 1 and f.get("repeat", 0) == r.get("repeat", 0) for f in sweeps)]
    two = twos[0] if twos else None
    direct = report.get("direct_pick") or {}
    cli = report.get("cli") or {}
    kill = report.get("kill") or {}
    middle = median([r["speedup"] for r in twos])
    return {"speedup_2_gpus": round(middle, 3) if middle is not None else None,
            "speedups_2_gpus": [r["speedup"] for r in twos],
            "scales_1_8x_on_2": (middle >= 1.8) if middle is not None else None,
            "picks_equal_1_vs_2": (all(r.get("same_pick_as_first") for r in twos)
                                   if two else None),
            "cluster_pick_equals_direct": direct.get("same_pick_as_cluster"),
            "cli_cluster_faster": cli.get("cluster_faster"),
            "cli_both_condition_tables": (all(cli[k].get("condition_table")
                                              for k in ("direct", "cluster"))
                                          if "direct" in cli and "cluster" in cli else None),
            "kill_loses_nothing": kill.get("exactly_once")}


def device_folder(names: Sequence[str]) -> str:
    """The results folder of a machine: ``h100x2`` for two H100s, ``h200`` for one H200."""
    text = (names[0] if names else "unknown").lower()
    model = next((m for m in ("h100", "h200", "a100", "l4") if m in text), None)
    model = model or "-".join(w for w in "".join(
        ch if ch.isalnum() else " " for ch in text).split()[:2]) or "unknown"
    return f"{model}x{len(names)}" if len(names) > 1 else model


class Deadline:
    """The run's time budget: a part that no longer fits is skipped, saying so."""

    def __init__(self, minutes: float, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.ends = clock() + 60.0 * minutes

    def left_s(self) -> float:
        return self.ends - self.clock()

    def allows(self, needed_s: float) -> bool:
        return self.left_s() >= needed_s


# -- GPU parts ----------------------------------------------------------------------------

def _device_info() -> dict[str, Any]:
    info: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                            "host": platform.node(), "cpus": os.cpu_count()}
    try:
        import pynvml

        pynvml.nvmlInit()
        count = int(pynvml.nvmlDeviceGetCount())
        info["visible_gpus"] = count
        info["devices"] = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                           for i in range(count)]
        info["driver"] = pynvml.nvmlSystemGetDriverVersion()
        cuda = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        info["cuda"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
    except Exception as exc:  # the JSON says why instead
        info["nvml_error"] = str(exc)
        info.setdefault("visible_gpus", 0)
    return info


def _batch(arg: str, space_size: int, runner: Any) -> int:
    from workbench.search.orchestrator import batch_for

    return (batch_for(runner) if arg == "auto" else space_size if arg == "space"
            else int(arg))


def _stat() -> str:
    try:
        return Path("/proc/stat").read_text()
    except OSError:
        return ""


def _sweep(runner: Any, folder: KernelFolder, shape: str, dtype: str, store_path: Path,
           batch: int, on_stored: Any = None, cores: Sequence[int] = (),
           ) -> tuple[Any, Any, float, dict[str, Any]]:
    """The product's search loop over the whole space; the sweep's phases beside it."""
    from distributed import get_task_stream

    from workbench.search.budget import Budget, SearchConfig
    from workbench.search.orchestrator import Search
    from workbench.store.sqlite import SQLiteStore

    space = folder.space(shape, dtype, runner.device)
    config = SearchConfig(shapes=(shape,), dtype=dtype, strategy="exhaustive",
                          budget=Budget(max_evaluations=space.size), batch_size=batch)
    store = SQLiteStore(store_path)
    search = Search.for_template(folder, folder.template, runner, config, runner.device,
                                 store=store)
    if on_stored is not None:
        search.events.subscribe(lambda event: on_stored(store))
    cpu_before = cpu_times(_stat(), cores)
    with get_task_stream(client=runner.client) as stream, trace_dispatch(runner) as submits:
        began, began_wall = time.perf_counter(), time.time()
        search.run()
        sweep_s, ended_wall = time.perf_counter() - began, time.time()
    phases = task_phases(list(stream.data), sweep_s)
    phases["idle_gaps"] = idle_gaps(list(stream.data), began_wall, ended_wall)
    phases["gap_causes"] = gap_causes(list(stream.data), submits)
    phases["cpu_busy_share"] = cpu_busy_share(cpu_before, cpu_times(_stat(), cores))
    phases["cores"] = len(cores)
    phases["trials"] = trial_phases(search.results(shape))
    phases["spin_up"] = spin_up_summary(search.results(shape))
    return search, store, sweep_s, phases


def _confirm(runner: Any, folder: KernelFolder, shape: str, dtype: str,
             results: Sequence[TrialResult]) -> Any:
    from workbench.engine.tuning import build_report

    return build_report(folder.name, shape, dtype, runner, list(results), confirm=CONFIRM,
                        conditions=DEFAULT_CONDITIONS, template=folder.template,
                        env=folder.env(shape, dtype, runner.device))


def run_count(gpus: int, folder: KernelFolder, shape: str, dtype: str, work: Path,
              batch_arg: str, per_gpu: int) -> tuple[dict[str, Any], list[TrialResult]]:
    from workbench.engine.bench import BenchSettings
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint

    allowed = sorted(os.sched_getaffinity(0))
    cores = cores_for(gpus, per_gpu, allowed)
    if (work / f"n{gpus}.sqlite").exists() or (work / f"cache-{gpus}").exists():
        raise SystemExit(f"{work}: a sweep on {gpus} GPUs ran here already; each sweep takes "
                         f"a fresh store and a cold cache (a repeat its own folder)")
    os.environ["WORKBENCH_CACHE_DIR"] = str(work / f"cache-{gpus}")  # cold, before workers
    # every thread of this process (the driver, Dask's event loop) on these cores, so the
    # cluster's processes, the GPU workers and nvcc, started from any of them, inherit them
    _pin_threads(cores)
    began = time.perf_counter()
    try:
        runner = open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()),
                                  "local", gpus=gpus)
    except BaseException:
        _pin_threads(allowed)
        raise
    start_s = time.perf_counter() - began
    try:
        space = folder.space(shape, dtype, runner.device)
        batch = _batch(batch_arg, space.size, runner)
        search, store, sweep_s, phases = _sweep(runner, folder, shape, dtype,
                                                work / f"n{gpus}.sqlite", batch, cores=cores)
        results = search.results(shape)
        store.close()
        per_device: dict[str, int] = {}
        counts: dict[str, int] = {}
        for r in results:
            worker = (r.extra or {}).get("worker") or {}
            label = f"{worker.get('host')} GPU {worker.get('gpu')}"
            per_device[label] = per_device.get(label, 0) + 1
            counts[r.status.value] = counts.get(r.status.value, 0) + 1
        ok = sorted((r for r in results if r.status is Status.OK and r.median_us),
                    key=lambda r: r.median_us or 0.0)
        confirm_began = time.perf_counter()
        report = _confirm(runner, folder, shape, dtype, results)
        row = {"gpus": gpus, "description": runner.description, "batch": batch,
               "cores": len(cores), "compile_limit": runner.compile_limit,
               "compile_peak": runner.compiles.peak,
               "compiles_submitted": runner.compiles.submitted,
               "start_s": round(start_s, 1), "sweep_s": round(sweep_s, 1),
               "configs": len(results),
               "configs_per_min": round(len(results) / sweep_s * 60.0, 1),
               "status_counts": counts, "per_device": per_device, "phases": phases,
               "best_search": {"config": dict(ok[0].config), "median_us": ok[0].median_us}
               if ok else None,
               "confirmation_s": round(time.perf_counter() - confirm_began, 1),
               "confirmed": pick_summary(report)}
        return row, list(results)
    finally:
        runner.close()
        _pin_threads(allowed)


def set_measures_per_gpu(n: int) -> None:
    """The experiment's knob: every module that read ``MEASURES_PER_GPU`` at import sees
    ``n`` (the driver computes the tasks' resources and the workers' threads from it)."""
    from workbench.engine import dask_cluster, dask_runner, dask_tasks

    if n < 1:
        raise SystemExit(f"--measures-per-gpu: got {n}; expected a positive integer")
    for module in (dask_tasks, dask_runner, dask_cluster):
        module.MEASURES_PER_GPU = n  # type: ignore[attr-defined]


def set_queued_per_gpu(n: int) -> None:
    """The experiment's other knob: measure tasks queued per GPU worker beyond its running
    ones (0: only the running slots are filled)."""
    _set_runner_knob("QUEUED_PER_GPU", "--queued-per-gpu", n)


def set_boundary_reserve_per_gpu(n: int) -> None:
    """The experiment's third knob: next-batch measure tasks per GPU worker sent at a
    batch's end beyond the in-flight limit (the design before the queue: 0 queued, 4 here)."""
    _set_runner_knob("BOUNDARY_RESERVE_PER_GPU", "--boundary-reserve-per-gpu", n)


def _set_runner_knob(name: str, flag: str, n: int) -> None:
    from workbench.engine import dask_runner

    if n < 0:
        raise SystemExit(f"{flag}: got {n}; expected 0 or a positive integer")
    setattr(dask_runner, name, n)


def _runner_knob(name: str) -> int:
    from workbench.engine import dask_runner

    return int(getattr(dask_runner, name))


def queued_per_gpu() -> int:
    return _runner_knob("QUEUED_PER_GPU")


def measures_per_gpu() -> int:
    from workbench.engine import dask_tasks

    return int(dask_tasks.MEASURES_PER_GPU)


def _pin_threads(cores: Sequence[int]) -> None:
    """Every thread of this process on ``cores`` (Linux sets affinity per thread; a new
    thread or process inherits its creator's)."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(int(tid), cores)


def run_direct_pick(folder: KernelFolder, shape: str, dtype: str,
                    results: Sequence[TrialResult]) -> dict[str, Any]:
    from workbench.engine.bench import BenchSettings
    from workbench.engine.runner import LocalRunner

    began = time.perf_counter()
    with LocalRunner(folder, folder.template, BenchSettings()) as runner:
        report = _confirm(runner, folder, shape, dtype, results)
    return {"runner": runner.description, "seconds": round(time.perf_counter() - began, 1),
            "confirmed": pick_summary(report)}


def run_cli(gpus: int | None, folder: KernelFolder, shape: str, dtype: str,
            work: Path, budget: int = CLI_BUDGET) -> dict[str, Any]:
    name = f"cli-{gpus or 'direct'}"
    command = [sys.executable, "-m", "workbench.cli", "tune", str(folder.path), "--shape",
               shape, "--dtype", dtype, "--strategy", "random", "--budget", str(budget),
               "--store", str(work / f"{name}.sqlite")]
    if gpus is not None:  # no --batch: the batch follows the GPU count
        command += ["--cluster", "local", "--gpus", str(gpus)]
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(work / f"cache-{name}")}
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400,
                          check=False)
    wall_s = time.perf_counter() - began
    out = done.stdout
    return {"command": " ".join(command[1:]), "rc": done.returncode,
            "wall_s": round(wall_s, 1),
            "condition_table": "round 2" in out and "cache conditions" in out,
            "says_cannot": "cannot measure under cache conditions" in out,
            "stdout_tail": out[-3000:], "stderr_tail": done.stderr[-1500:]}


def run_kill(gpus: int, folder: KernelFolder, shape: str, dtype: str, work: Path,
             batch_arg: str) -> dict[str, Any]:
    from workbench.engine.bench import BenchSettings
    from workbench.engine.dask_cluster import open_dask_runner
    from workbench.engine.dask_tasks import LiveEndpoint, worker_pid
    from workbench.store.base import provenance_for
    from workbench.store.sqlite import SQLiteStore

    os.environ["WORKBENCH_CACHE_DIR"] = str(work / "cache-kill")
    runner = open_dask_runner(LiveEndpoint(folder, folder.template, BenchSettings()), "local",
                              gpus=gpus)
    space = folder.space(shape, dtype, runner.device)
    killed: dict[str, Any] = {}
    lock = threading.Lock()

    def maybe_kill(store: Any) -> None:
        with lock:
            if killed or store.count_trials() < space.size // 3:
                return
            victim = runner.workers[-1].address
            pid = runner.client.run(worker_pid, workers=[victim])[victim]
            os.kill(pid, signal.SIGKILL)
            killed.update(address=victim, pid=pid, at_trials=store.count_trials())

    try:
        _, store, sweep_s, _ = _sweep(runner, folder, shape, dtype, work / "kill.sqlite",
                                      _batch(batch_arg, space.size, runner),
                                      on_stored=maybe_kill)
        store.close()
    finally:
        runner.close()
    store = SQLiteStore(work / "kill.sqlite")
    stored = store.trials(provenance_for(runner, folder.template), shape, dtype)
    counts: dict[str, int] = {}
    for t in stored:
        counts[t.result.status.value] = counts.get(t.result.status.value, 0) + 1
    store.close()
    check = stored_once([c.key() for c in space], [t.result.config.key() for t in stored])
    return {"gpus": gpus, "killed": killed, **check, "status_counts": counts,
            "sweep_s": round(sweep_s, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kernel", default="sample_kernels/fused_add_rmsnorm")
    parser.add_argument("--shape", default="decode")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--gpus", default="1,2,4,8")
    parser.add_argument("--batch", default="auto",
                        help="'auto' (the product's: 16 per GPU, the next batch compiled "
                             "ahead), 'space' (the sweep as one batch) or candidates per batch")
    parser.add_argument("--cores-per-gpu", type=int, default=16,
                        help="CPU cores a sweep on N GPUs runs on: N x this (the lent "
                             "machines have 16 per GPU); 0: every core")
    parser.add_argument("--max-minutes", type=float, default=7.0)
    parser.add_argument("--cli-budget", type=int, default=CLI_BUDGET,
                        help="the CLI comparison's --budget (total evaluations)")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: "
                        "direct_pick, cli, kill")
    parser.add_argument("--out-root", default=os.environ.get("OUT", "."),
                        help="the result goes to OUT_ROOT/results/cluster/<device>/"
                             "multi-gpu-dask-sweep-<date>.json (default $OUT)")
    parser.add_argument("--nvrtc", default=None, choices=("off", "on", "all"),
                        help="WORKBENCH_NVRTC for every compile of the run (default: the "
                             "environment's, else off: nvcc alone)")
    parser.add_argument("--measures-per-gpu", type=int, default=None,
                        help="an experiment: measure tasks each GPU worker holds at once "
                             "(default: the product's MEASURES_PER_GPU)")
    parser.add_argument("--queued-per-gpu", type=int, default=None,
                        help="an experiment: measure tasks each GPU worker holds queued "
                             "beyond its running ones (default: the product's "
                             "QUEUED_PER_GPU)")
    parser.add_argument("--boundary-reserve-per-gpu", type=int, default=None,
                        help="an experiment: next-batch measure tasks per GPU worker sent at "
                             "a batch's end beyond the in-flight limit (default: the "
                             "product's BOUNDARY_RESERVE_PER_GPU)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the GPU counts this many times, interleaved (1, 2, 1, 2, "
                             "...): each repeat's scaling is against its own first sweep, "
                             "and the target reads their median")
    parser.add_argument("--plan", action="store_true",
                        help="print what would run (no GPU needed) and exit")
    args = parser.parse_args(argv)
    if args.measures_per_gpu is not None:
        set_measures_per_gpu(args.measures_per_gpu)
    if args.queued_per_gpu is not None:
        set_queued_per_gpu(args.queued_per_gpu)
    if args.boundary_reserve_per_gpu is not None:
        set_boundary_reserve_per_gpu(args.boundary_reserve_per_gpu)
    if args.repeat < 1:
        parser.error(f"--repeat: got {args.repeat}; expected a positive integer")
    if args.nvrtc is not None:  # read by every Compiler, in this process and the workers
        os.environ["WORKBENCH_NVRTC"] = args.nvrtc
    nvrtc_setting = os.environ.get("WORKBENCH_NVRTC", "off") or "off"
    if args.batch not in ("auto", "space") and not args.batch.isdigit():
        parser.error("--batch takes 'auto', 'space' or a positive integer")
    folder = load_kernel_folder(ROOT / args.kernel)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    deadline = Deadline(args.max_minutes)
    info = _device_info()
    visible = int(info.get("visible_gpus") or 0)
    counts = [n for n in (int(g) for g in args.gpus.split(",")) if n <= visible]
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    devices = list(info.get("devices") or [])
    rel = result_path("cluster", device_folder(devices), "multi-gpu-dask-sweep",
                      stamp).relative_to(RESULTS)
    out_root = Path(args.out_root)
    out = out_root / "results" / rel
    command = " ".join(["python3", "gpu_checks/multi_gpu_dask.py", *(argv or sys.argv[1:])])
    if args.plan:
        print(json.dumps({"kernel": folder.name, "shape": args.shape, "dtype": args.dtype,
                          "gpu_counts": counts, "visible_gpus": visible,
                          "batch": args.batch, "cores_per_gpu": args.cores_per_gpu,
                          "skip": sorted(skip), "out": str(out), "nvrtc": nvrtc_setting,
                          "repeat": args.repeat,
                          "max_minutes": args.max_minutes}, indent=1))
        return 0
    if not counts:
        print(f"no GPU count of {args.gpus} fits the {visible} visible GPUs", file=sys.stderr)
        return 3
    run = run_block("multi_gpu_dask", command,
                    device=f"{len(devices)}x {devices[0]}" if devices else "unknown",
                    driver=info.get("driver"), cuda=info.get("cuda"), date=stamp)
    report: dict[str, Any] = {"run": run, **info, "kernel": folder.name, "shape": args.shape,
                              "dtype": args.dtype, "batch": args.batch,
                              "cores_per_gpu": args.cores_per_gpu, "command": command,
                              "nvrtc": nvrtc_setting, "sweeps": [], "skipped": [],
                              "measures_per_gpu": measures_per_gpu(),
                              "queued_per_gpu": queued_per_gpu(),
                              "boundary_reserve_per_gpu": _runner_knob("BOUNDARY_RESERVE_PER_GPU"),
                              "repeat": args.repeat}
    problems = doc_problems(RESULTS / rel, report)
    if problems:
        print(f"the result would not follow the schema: {'; '.join(problems)}",
              file=sys.stderr)
        return 2

    def save() -> None:  # rewritten after each part: this run's own file from here on
        write_file(out_root, out, json.dumps(report, indent=1, default=str) + "\n",
                   overwrite=True, make_folders=True)

    began = time.perf_counter()
    last: list[TrialResult] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows: list[dict[str, Any]] = []
        for repeat, n in [(r, n) for r in range(args.repeat) for n in counts]:
            if rows and not deadline.allows(rows[0]["sweep_s"] * 1.2 / n + 60):
                report["skipped"].append(f"sweep on {n} GPUs (repeat {repeat}): "
                                         f"{deadline.left_s():.0f} s left")
                continue
            fresh = work / f"repeat-{repeat}"  # its own store and cold cache
            fresh.mkdir(exist_ok=True)
            row, last = run_count(n, folder, args.shape, args.dtype, fresh, args.batch,
                                  args.cores_per_gpu)
            rows.append({**row, "repeat": repeat})
            report["sweeps"] = scaling(rows)
            firsts = {r["repeat"]: r for r in reversed(rows)}  # each repeat's first row
            for r in report["sweeps"]:
                pick = r["confirmed"].get("pick")
                r["same_pick_as_first"] = (pick is not None and pick
                                           == firsts[r["repeat"]]["confirmed"].get("pick"))
            print(json.dumps({k: report["sweeps"][-1][k] for k in (
                "repeat", "gpus", "cores", "batch", "sweep_s", "configs_per_min", "speedup",
                "efficiency", "per_device", "compile_peak", "phases")}), flush=True)
            save()
        most = rows[-1]["gpus"] if rows else counts[0]
        if "direct_pick" not in skip and last and deadline.allows(60):
            direct = run_direct_pick(folder, args.shape, args.dtype, last)
            cluster_pick = rows[-1]["confirmed"].get("pick")
            direct["cluster_gpus"] = most
            direct["same_pick_as_cluster"] = (cluster_pick is not None
                                              and direct["confirmed"].get("pick")
                                              == cluster_pick)
            report["direct_pick"] = direct
            print(json.dumps({"direct_pick": direct["confirmed"].get("pick"),
                              "cluster_pick": cluster_pick}), flush=True)
            save()
        elif "direct_pick" not in skip:
            report["skipped"].append("direct_pick: out of time")
        if "cli" not in skip and most > 1 and deadline.allows(150):
            report["cli"] = {"budget": args.cli_budget, "direct": run_cli(
                None, folder, args.shape, args.dtype, work, args.cli_budget)}
            save()
            report["cli"]["cluster"] = run_cli(most, folder, args.shape, args.dtype, work,
                                               args.cli_budget)
            report["cli"]["cluster_faster"] = (report["cli"]["cluster"]["wall_s"]
                                               < report["cli"]["direct"]["wall_s"])
            print(json.dumps({k: {"wall_s": v["wall_s"], "rc": v["rc"],
                                  "condition_table": v["condition_table"]}
                              for k, v in report["cli"].items() if isinstance(v, dict)}),
                  flush=True)
            save()
        elif "cli" not in skip:
            report["skipped"].append("cli: one GPU or out of time")
        if "kill" not in skip and most > 1 and rows and deadline.allows(
                rows[-1]["sweep_s"] * 1.3 + 30):
            report["kill"] = run_kill(most, folder, args.shape, args.dtype, work, args.batch)
            print(json.dumps({k: report["kill"][k] for k in (
                "gpus", "space", "stored", "distinct", "lost_count", "exactly_once")}),
                flush=True)
        elif "kill" not in skip:
            report["skipped"].append("kill: one GPU or out of time")
    report["total_s"] = round(time.perf_counter() - began, 1)
    report["targets"] = targets(report)
    print(json.dumps({"targets": report["targets"]}), flush=True)
    save()
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
