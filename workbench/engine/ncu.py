"""Optional Nsight Compute metrics: the planner's profile of a best config, and the L2 hit
rate of a 2-D tiled kernel's finalists (:func:`finalist_l2`).

:func:`profile_config` runs ``ncu`` on a small driver (this package's own
``_ncu_driver.py``: it loads one compiled cubin with pycuda, fills the inputs with random
numbers and launches the kernel a few times). It returns None, never raises, when ``ncu``
is not on PATH, there is no GPU, pycuda is missing, or anything goes wrong: profiling
enriches the report and the prompt but never fails a tune or the loop. Profiler text is
data in prompts (fenced by :mod:`workbench.llm.prompts`).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from workbench.core.cache_profile import L2_HIT_METRIC, FinalistL2, L2Profile
from workbench.core.kernel_folder import KernelFolder
from workbench.core.records import Config, Status, TrialResult
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.engine.runner import PlanningRunner

log = logging.getLogger(__name__)

NCU_METRICS: tuple[str, ...] = (
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "launch__registers_per_thread",
    "smsp__average_warp_latency_issue_stalled_long_scoreboard.pct",
)
DRIVER = Path(__file__).with_name("_ncu_driver.py")  # the launcher ncu runs


def ncu_missing() -> str | None:
    """Why Nsight Compute cannot profile here (None when it can): ``ncu`` on PATH, a CUDA
    device node and pycuda (the driver's launcher) are needed."""
    if shutil.which("ncu") is None:
        return "ncu (Nsight Compute) is not on PATH"
    if not (os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")):
        return "no CUDA device on this machine"
    if importlib.util.find_spec("pycuda") is None:
        return "pycuda (which launches the profiled kernel) is not installed"
    return None


def ncu_available() -> bool:
    """``ncu`` on PATH, a CUDA device node and pycuda importable."""
    return ncu_missing() is None


#: Microseconds per unit of a duration metric as ``ncu --csv`` prints it.
NCU_TIME_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
               "msecond": 1e3}


def ncu_csv_rows(text: str) -> list[dict[str, str]]:
    """The rows of ``ncu --csv`` output (one per kernel launch and metric); lines before the
    CSV header (``==PROF==`` notices, the driver's output) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def parse_ncu_csv(text: str) -> dict[str, float | str]:
    """Metric name -> value from ``ncu --csv`` output (the first kernel row of each metric).

    Numbers lose their thousands separators and become floats; other values stay text.
    """
    launches = ncu_launches(text)
    return launches[0] if launches else {}


def ncu_launches(text: str) -> list[dict[str, float | str]]:
    """One metric dict per profiled launch (ncu's result ``ID``), in launch order; keys are
    ``name (unit)`` (or the bare name without a unit), numbers as floats."""
    by_id: dict[str, dict[str, float | str]] = {}
    for row in ncu_csv_rows(text):
        name, value = row.get("Metric Name"), row.get("Metric Value")
        if not name or value is None:
            continue
        out = by_id.setdefault(row.get("ID") or "0", {})
        unit = (row.get("Metric Unit") or "").strip()
        key = f"{name} ({unit})" if unit else name
        if key in out:
            continue
        try:
            out[key] = float(value.replace(",", ""))
        except ValueError:
            out[key] = value
    return [by_id[k] for k in sorted(by_id, key=lambda k: int(k) if k.isdigit() else 0)]


def ncu_problem(folder: KernelFolder, template: KernelTemplate, config: Config, shape: str,
             dtype: str, cubin: str) -> dict[str, Any]:
    env = folder.env(shape, dtype)
    launch = template.launch_for(config, env)
    args = folder.arg_layout(shape, dtype)
    return {"cubin": cubin, "entry": template.entry, "grid": list(launch.grid),
            "block": list(launch.block), "smem_bytes": launch.smem_bytes, "args": args}


def profile_config(folder: KernelFolder, template: KernelTemplate, config: Config, shape: str,
                   dtype: str, *, compiler: Any, metrics: Sequence[str] = NCU_METRICS,
                   timeout_s: float = 120.0) -> Mapping[str, float | str] | None:
    """Nsight Compute metrics of one config at (shape, dtype), or None (see module doc)."""
    return profile_configs(folder, template, [config], shape, dtype, compiler=compiler,
                           metrics=metrics, timeout_s=timeout_s)[0]


def profile_configs(folder: KernelFolder, template: KernelTemplate, configs: Sequence[Config],
                    shape: str, dtype: str, *, compiler: Any,
                    metrics: Sequence[str] = NCU_METRICS,
                    timeout_s: float = 240.0) -> list[Mapping[str, float | str] | None]:
    """Nsight Compute metrics of each of ``configs`` at (shape, dtype), in one ncu run over
    one driver process (None for a config that did not compile or gave no row; all None
    when ncu cannot run). Each config is launched twice on the same buffers and its second
    launch is profiled, caches flushed before it, clocks left as they are."""
    none: list[Mapping[str, float | str] | None] = [None] * len(configs)
    if not ncu_available():
        return none
    try:
        kernels: list[tuple[int, dict[str, Any]]] = []
        for i, config in enumerate(configs):
            compiled = compiler.compile(template.render(config, dtype))
            if compiled.ok and compiled.cubin_path is not None:
                kernels.append((i, ncu_problem(folder, template, config, shape, dtype,
                                               compiled.cubin_path)))
        if not kernels:
            return none
        problem = {"args": kernels[0][1]["args"], "launches": 2,
                   "kernels": [{k: v for k, v in p.items() if k != "args"} for _i, p in kernels]}
        with tempfile.TemporaryDirectory(prefix="wb-ncu-") as tmp:
            problem_path = write_file(tmp, "problem.json", json.dumps(problem))
            # clocks as they are (ncu would lock them to base otherwise); caches flushed
            command = [str(shutil.which("ncu")), "--csv", "--clock-control", "none",
                       "--cache-control", "all", "--metrics", ",".join(metrics),
                       "--kernel-name", template.entry, sys.executable, str(DRIVER),
                       str(problem_path)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        if done.returncode != 0:
            log.warning("ncu exited with %d: %s", done.returncode, done.stderr[-500:])
            return none
        launches = ncu_launches(done.stdout)
        out = list(none)
        for n, (i, _p) in enumerate(kernels):
            if 2 * n + 1 < len(launches):
                out[i] = launches[2 * n + 1] or None
        return out
    except Exception:  # profiling is optional: never fail the loop
        log.warning("profiling %s %s/%s failed; continuing without profiler metrics",
                    template.name, shape, dtype, exc_info=True)
        return none


class MetricProfiler(Protocol):
    """Profiles configs of a template (Nsight Compute here; a fake in tests)."""

    def missing(self) -> str | None:
        """Why it cannot profile on this machine, or None."""
        ...

    def profile(self, folder: KernelFolder, template: KernelTemplate,
                configs: Sequence[Config], shape: str, dtype: str, *, compiler: Any,
                metrics: Sequence[str]) -> list[Mapping[str, float | str] | None]:
        """One metric dict (or None) per config, in order."""
        ...


class NcuProfiler:
    """:func:`profile_configs` behind the :class:`MetricProfiler` protocol."""

    def missing(self) -> str | None:
        return ncu_missing()

    def profile(self, folder: KernelFolder, template: KernelTemplate,
                configs: Sequence[Config], shape: str, dtype: str, *, compiler: Any,
                metrics: Sequence[str]) -> list[Mapping[str, float | str] | None]:
        return profile_configs(folder, template, configs, shape, dtype, compiler=compiler,
                               metrics=metrics)


def metric_value(metrics: Mapping[str, float | str] | None, name: str) -> float | None:
    """``name``'s number in :func:`parse_ncu_csv` output (keys carry the unit: ``name (%)``)."""
    for key, value in (metrics or {}).items():
        if (key == name or key.startswith(name + " (")) and isinstance(value, float):
            return value
    return None


def finalist_l2(folder: KernelFolder, template: KernelTemplate, runner: object,
                finalists: Sequence[TrialResult], shape: str, dtype: str, *,
                profiler: MetricProfiler | None = None) -> L2Profile:
    """The L2 hit rate of each of ``finalists`` (their times beside), profiled on the live
    GPU ``runner`` measures on; otherwise an :class:`L2Profile` saying why not."""
    profiler = profiler or NcuProfiler()
    if not isinstance(runner, PlanningRunner):
        return L2Profile(note=f"{getattr(runner, 'description', 'the runner')} does not run "
                              "kernels here (Nsight Compute needs the live GPU)")
    why = profiler.missing()
    if why is not None:
        return L2Profile(note=why)
    timed = [f for f in finalists if f.status is Status.OK]
    got = profiler.profile(folder, template, [f.config for f in timed], shape, dtype,
                           compiler=runner.compiler, metrics=(L2_HIT_METRIC,))
    rows: list[FinalistL2] = []
    failed: list[str] = []
    for f, metrics in zip(timed, got, strict=True):
        rate = metric_value(metrics, L2_HIT_METRIC)
        if rate is None:
            failed.append(str(dict(f.config)))
        rows.append(FinalistL2(f.config, f.median_us, rate))
    note = (f"Nsight Compute gave no L2 hit rate for {len(failed)} of {len(rows)} finalists "
            f"({'; '.join(failed)[:300]})" if failed else "")
    if not rows:
        note = "no finalist to profile"
    return L2Profile(finalists=tuple(rows), note=note)
