"""Exports of stored trials: pandas DataFrame, CSV, Kernel Tuner cache JSON, T4 results JSON.

Kernel Tuner cache (the file ``tune_kernel(cache=...)`` writes and simulation mode reads):
``{"device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params",
"objective", "cache": {"v1,v2,...": {param: value, ..., "time": ms, "compile_time": ms,
"verification_time": ms, "benchmark_time": ms, "strategy_time": 0, "framework_time": 0,
"timestamp": ...}}}``. The key is the config's values joined by commas in
``tune_params_keys`` order (``str()`` of each value). A config that did not run carries one
of Kernel Tuner's markers as its ``time``: ``CompilationFailedConfig``,
``RuntimeFailedConfig`` or ``InvalidConfig``. Individual repetition times are exported as
``times`` only when the result kept them (``TrialResult.samples_us``); summaries are never
expanded into invented samples.

T4 (the auto-tuning community's open results schema, version 1.0.0): ``{"schema_version",
"metadata": {"timeunit": "milliseconds"}, "results": [{"timestamp", "configuration",
"objectives", "times": {...}, "invalidity", "correctness", "measurements": [...]}]}``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.core.defines import define_lines
from workbench.core.errors import Problem, StoreError
from workbench.core.identifiers import identifier_problem
from workbench.core.picks import PickRecord
from workbench.core.records import Status, TrialResult, Value
from workbench.store.base import StoredTrial

if TYPE_CHECKING:
    import pandas

T4_SCHEMA_VERSION = "1.0.0"

# Kernel Tuner's markers for configs that produced no time.
KT_MARKERS: Mapping[Status, str] = {
    Status.COMPILE_ERROR: "CompilationFailedConfig",
    Status.LAUNCH_ERROR: "RuntimeFailedConfig",
    Status.CRASHED: "RuntimeFailedConfig",
    Status.TIMEOUT: "RuntimeFailedConfig",
    Status.WRONG_RESULT: "RuntimeFailedConfig",
    Status.PRUNED: "InvalidConfig",
}
# T4 "invalidity" per status.
T4_INVALIDITY: Mapping[Status, str] = {
    Status.OK: "correct",
    Status.COMPILE_ERROR: "compile",
    Status.LAUNCH_ERROR: "runtime",
    Status.CRASHED: "runtime",
    Status.TIMEOUT: "timeout",
    Status.WRONG_RESULT: "correctness",
    Status.PRUNED: "constraints",
}

Row = TrialResult | StoredTrial


def _split(row: Row) -> tuple[TrialResult, str]:
    if isinstance(row, StoredTrial):
        return row.result, row.created
    return row, ""


def _ms(seconds: float | None) -> float:
    return 0.0 if seconds is None else seconds * 1000.0


def trials_dataframe(rows: Iterable[Row]) -> pandas.DataFrame:
    """One row per trial: shape, dtype, status, reason, every parameter, timing (µs),
    resources and provenance-free identifiers. Needs pandas (a core dependency)."""
    import pandas

    records: list[dict[str, Any]] = []
    for row in rows:
        result, created = _split(row)
        timing = result.timing
        usage = result.usage
        record: dict[str, Any] = {
            "shape": result.shape, "dtype": result.dtype, "status": result.status.value,
            "reason": result.reason, **dict(result.config),
            "median_us": timing.median_us if timing else None,
            "min_us": timing.min_us if timing else None,
            "q1_us": timing.q1_us if timing else None,
            "q3_us": timing.q3_us if timing else None,
            "rse_median_pct": timing.rse_median_pct if timing else None,
            "reps": timing.reps if timing else None,
            "bandwidth_gb_per_s": result.bandwidth_gb_per_s,
            "regs_per_thread": usage.regs_per_thread if usage else None,
            "smem_bytes_per_block": usage.smem_bytes_per_block if usage else None,
            "occupancy": result.occupancy.fraction if result.occupancy else None,
            "compile_s": result.compile_s, "device": result.device, "source": result.source,
            "instance_hash": result.instance_hash, "created": created,
        }
        records.append(record)
    return pandas.DataFrame.from_records(records)


def write_csv(rows: Iterable[Row], path: str | Path, *, overwrite: bool = False) -> Path:
    """Write :func:`trials_dataframe` as CSV; returns the path. The one write policy applies
    (:func:`workbench.core.write_policy.write_beside`): no symlinks, atomic, an existing file
    replaced only with ``overwrite=True``."""
    from workbench.core.write_policy import write_beside

    text = trials_dataframe(rows).to_csv(index=False, quoting=csv.QUOTE_MINIMAL)
    return write_beside(path, text, overwrite=overwrite)


def _one_problem(results: Sequence[TrialResult]) -> tuple[str, str]:
    problems = sorted({(r.shape, r.dtype) for r in results})
    if len(problems) > 1:
        raise StoreError("an export holds one (shape, dtype); got "
                         + ", ".join(f"{s}/{d}" for s, d in problems),
                         key="shape", value=problems, expected="a single shape and dtype")
    return problems[0] if problems else ("", "")


def kernel_tuner_cache(rows: Iterable[Row], *, tune_params: Mapping[str, Sequence[Value]],
                       kernel_name: str, device_name: str,
                       problem_size: Sequence[int] | int = (), objective: str = "time"
                       ) -> dict[str, Any]:
    """Kernel Tuner's cache dict for trials of one (shape, dtype).

    ``tune_params`` is the ordered name -> values table (e.g. ``{p.name: list(p.values())
    for p in space.params}``); its order fixes the cache keys.
    """
    pairs = [_split(r) for r in rows]
    _one_problem([r for r, _ in pairs])
    names = list(tune_params)
    cache: dict[str, dict[str, Any]] = {}
    for result, created in pairs:
        missing = [n for n in names if n not in result.config]
        if missing:
            raise StoreError(f"trial config lacks tune parameter(s) {missing}",
                             key="config", value=dict(result.config), expected=names)
        key = ",".join(str(result.config[n]) for n in names)
        entry: dict[str, Any] = {n: result.config[n] for n in names}
        if result.status is Status.OK and result.timing is not None:
            entry["time"] = result.timing.median_us / 1000.0
            if result.samples_us:
                entry["times"] = [float(t) / 1000.0 for t in result.samples_us]
        else:
            entry["time"] = KT_MARKERS.get(result.status, "RuntimeFailedConfig")
        entry.update({
            "compile_time": _ms(result.compile_s), "verification_time": _ms(result.verify_s),
            "benchmark_time": _ms(result.bench_s), "strategy_time": 0, "framework_time": 0,
            "timestamp": created})
        cache[key] = entry
    size = [problem_size] if isinstance(problem_size, int) else list(problem_size)
    return {"device_name": device_name, "kernel_name": kernel_name, "problem_size": size,
            "tune_params_keys": names, "tune_params": {n: list(v) for n, v in tune_params.items()},
            "objective": objective, "cache": cache}


def t4_results(rows: Iterable[Row], *, param_names: Sequence[str],
               objective: str = "time") -> dict[str, Any]:
    """T4 results dict (schema 1.0.0) for trials; times in milliseconds."""
    out: list[dict[str, Any]] = []
    for row in rows:
        result, created = _split(row)
        timing = result.timing
        times_us = result.samples_us
        measurements: list[dict[str, Any]] = []
        if result.status is Status.OK and timing is not None:
            measurements += [
                {"name": "time", "value": timing.median_us / 1000.0, "unit": "ms"},
                {"name": "time_min", "value": timing.min_us / 1000.0, "unit": "ms"},
                {"name": "time_q1", "value": timing.q1_us / 1000.0, "unit": "ms"},
                {"name": "time_q3", "value": timing.q3_us / 1000.0, "unit": "ms"},
                {"name": "repetitions", "value": timing.reps, "unit": ""}]
            if result.bandwidth_gb_per_s is not None:
                measurements.append({"name": "bandwidth", "value": result.bandwidth_gb_per_s,
                                     "unit": "GB/s"})
        if result.usage is not None:
            measurements.append({"name": "registers_per_thread",
                                 "value": result.usage.regs_per_thread, "unit": ""})
        entry: dict[str, Any] = {
            "configuration": {n: result.config[n] for n in param_names if n in result.config},
            "objectives": [objective],
            "times": {"compilation_time": _ms(result.compile_s),
                      "runtimes": [float(t) / 1000.0 for t in times_us] if times_us else [],
                      "framework": 0.0, "search_algorithm": 0.0,
                      "validation": _ms(result.verify_s), "benchmark": _ms(result.bench_s)},
            "invalidity": T4_INVALIDITY[result.status],
            "correctness": 0 if result.status is Status.WRONG_RESULT else 1,
            "measurements": measurements,
        }
        if created:
            entry["timestamp"] = created
        out.append(entry)
    return {"schema_version": T4_SCHEMA_VERSION, "metadata": {"timeunit": "milliseconds"},
            "results": out}


def write_json(data: Mapping[str, Any], path: str | Path, *, overwrite: bool = False) -> Path:
    """Write an export dict as indented JSON; returns the path. The one write policy applies,
    as for :func:`write_csv`."""
    from workbench.core.write_policy import write_beside

    return write_beside(path, json.dumps(data, indent=1, default=str) + "\n",
                        overwrite=overwrite)


# -- the stored pick: what the header and JSON exports write -------------------------------


def _pick_problems(pick: PickRecord) -> list[Problem]:
    """Every parameter name and value of the pick that may not enter a ``#define``."""
    where = f"stored pick {pick.id or '(search-best)'} of {pick.problem}"
    out: list[Problem] = []
    for name, value in pick.config.items():
        reason = identifier_problem(name)
        if reason is not None:
            out.append(Problem(where, "parameter name", repr(name)[:80], reason))
        if isinstance(value, bool) or (isinstance(value, int) and -(2**63) <= value < 2**63):
            continue
        if isinstance(value, str) and identifier_problem(value) is None:
            continue
        out.append(Problem(where, f"parameter {name!r}"[:80], repr(value)[:80],
                           "an integer, a bool or a C identifier"))
    return out


def _checked(pick: PickRecord) -> None:
    problems = _pick_problems(pick)
    if problems:
        from workbench.core.dispatch import UnsafeExportError

        raise UnsafeExportError(problems)


def pick_header(pick: PickRecord) -> str:
    """The pick as a ``#define`` block, headed by how it was decided (a fallback says so).
    Names and values are checked first (identifiers, integers)."""
    _checked(pick)
    note = pick.how().replace("\n", " ").replace("*/", "* /")
    speed = pick.speedup_text()
    lines = [f"// {pick.kernel} {pick.shape} {pick.dtype}: {pick.median_us:.3f} us"
             + (f", {speed} the baseline" if speed else ""),
             f"// pick: {note}"[:400], *define_lines(pick.config)]
    return "\n".join(lines) + "\n"


def pick_dict(pick: PickRecord) -> dict[str, Any]:
    """The pick as the JSON export's dict: the config, its time, how it was decided."""
    _checked(pick)
    return {"kernel": pick.kernel, "shape": pick.shape, "dtype": pick.dtype,
            "median_us": pick.median_us, "config": dict(pick.config),
            "decided": pick.decided, "fallback": pick.is_fallback,
            "fallback_reason": pick.fallback_reason, "rule": pick.rule,
            "condition": pick.condition, "search_median_us": pick.search_median_us,
            "baseline_us": pick.baseline_us, "speedup": pick.speedup,
            "speedup_ci": ([pick.speedup_low, pick.speedup_high]
                           if pick.speedup_low is not None else None),
            "holds": pick.holds, "device": pick.device,
            "template_version": pick.template_version, "session_id": pick.session_id,
            "pick_id": pick.id, "created": pick.created}


def template_pick(store: Any, kernel: str, template_sha256: str, shape: str,
                  dtype: str) -> PickRecord | None:
    """The newest pick stored for this template text at (shape, dtype), measured on any
    device (``pick.device`` names it), read from the store alone (no runner, no GPU);
    without one, the fastest stored trial of that text as a ``search-best`` fallback that
    says no pick was stored. None: no ok trial either."""
    from workbench.core.picks import search_best_pick

    stored = store.picks(kernel=kernel, shape=shape, dtype=dtype,
                         template_sha256=template_sha256)
    if stored:
        return stored[-1]
    trials = [t.result for t in store.trials(shape=shape, dtype=dtype)
              if t.provenance.template_sha256 == template_sha256]
    return search_best_pick(trials, kernel=kernel, template_version="")
