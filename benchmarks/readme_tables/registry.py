"""Which renderer draws which kind of result: ``RENDERERS[kind]`` takes every result file of
that kind (sorted by path) and returns Markdown. A kind with no entry is still listed, with
its files and their commands, by benchmarks/readme.py: to give a new kind a table, add one
entry here; to add data, drop a file under the schema (benchmarks/results_schema.py)."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))

from readme_tables import (  # noqa: E402
    core,
    dirty_l2,
    peers_tune,
    shapes,
    small_budget,
    stage1_summary,
)


@dataclass(frozen=True)
class Result:
    """One JSON result file: its path below benchmarks/results/, its run block, its data."""

    rel: str
    run: dict[str, Any]
    doc: dict[str, Any]


@dataclass(frozen=True)
class Renderer:
    """A section title and the function that draws every file of one kind."""

    title: str
    render: Callable[[list[Result]], str]


def _each(draw: Callable[[Result], str]) -> Callable[[list[Result]], str]:
    """Draw every file on its own, under its name."""
    return lambda results: "\n\n".join(f"`{r.rel}`:\n\n{draw(r)}" for r in results)


def _fixed(draw: Callable[[], str]) -> Callable[[list[Result]], str]:
    """A section that reads a fixed set of files (they are named in its text)."""
    return lambda results: draw()


def _peers_tune(r: Result) -> str:
    rows = list(r.doc["rows"])
    order = {"named": 0, "unseen": 1, "held out": 2}
    rows.sort(key=lambda row: (order[peers_tune.shape_set(row)], row["kernel"]))
    return peers_tune.render(rows)


def _dirty_l2(r: Result) -> str:
    alt = any(k.startswith("ours alt") for row in r.doc["rows"] for k in row["impls"])
    return dirty_l2.alternatives(r.doc) if alt else dirty_l2.table(r.doc)


def _stage1(r: Result) -> str:
    """Results of benchmarks/stage1_corpus.py (keys set / environment / kernels)."""
    import stage1_corpus

    env = r.doc.get("environment", {})
    head = f"Set `{r.doc.get('set')}`" + (f"; environment: {json.dumps(env, sort_keys=True)}"
                                         if env else "")
    return head + "\n\n" + stage1_corpus.markdown(r.doc)


def _stage1_probe(r: Result) -> str:
    """Results of gpu_checks/*_probe.py: named configs of a lift and of the expert, timed in one
    run at one shape (each group's entries that carry a median)."""
    # a probe keeps its entries in route groups ({"lift": {name: entry}}) or, with one
    # route, at the top level of the document (drawn as the lift's)
    top = {k: v for k, v in r.doc.items() if isinstance(v, dict) and "median_us" in v}
    groups = {**({"lift": top} if top else {}),
              **{k: v for k, v in r.doc.items() if isinstance(v, dict) and k not in top}}
    rows = [[group, name, json.dumps(e.get("config", {}), sort_keys=True), e.get("status"),
             e.get("median_us"), e.get("regs"), e.get("speedup")]
            for group, entries in groups.items()
            for name, e in entries.items() if isinstance(e, dict) and "median_us" in e]
    head = (f"`{r.doc.get('kernel')}` at `{r.doc.get('shape')}` ({r.doc.get('dtype')}); "
            "speedup over the kernel as written in the same run")
    return head + "\n\n" + core.table(
        ["route", "variant", "config", "status", "median us", "registers", "speedup"], rows)


def _lab_latency(r: Result) -> str:
    """Results of benchmarks/lab_latency.py: p50/p99/max per endpoint and phase."""
    rows = [[phase, endpoint, v.get("n"), v.get("p50_ms"), v.get("p99_ms"), v.get("max_ms")]
            for phase in ("alone", "six_hostile_inits") if phase in r.doc
            for endpoint, v in r.doc[phase].items()]
    return core.table(["phase", "endpoint", "requests", "p50 ms", "p99 ms", "max ms"], rows)


def _lab_browser(r: Result) -> str:
    """Results of benchmarks/panel/bench_lab_browser.py: times inside the page."""
    def row(group: str, name: str, v: Any) -> list[Any]:
        if isinstance(v, dict):
            return [group, name, v.get("n"), v.get("median_ms"), v.get("max_ms")]
        return [group, name, 1, v, v]

    setup = r.doc.get("setup", {})
    rows = [row(group, name, v) for group in ("sidebar", "five_panels")
            for name, v in r.doc.get(group, {}).items()
            if name not in ("sessions_listed", "webgl_messages", "error") and v is not None]
    errors = [f"{group} did not finish: {r.doc[group]['error'].split('; the page:')[0][:300]} "
              "(the page's state is in the file)"
              for group in ("sidebar", "five_panels") if "error" in r.doc.get(group, {})]
    return (f"{setup.get('trials')} stored trials, {r.doc['sidebar'].get('sessions_listed')} "
            f"sessions listed; {r.doc['five_panels'].get('webgl_messages', '—')} WebGL messages; "
            f"load average {setup.get('load_average_before')} before, "
            f"{setup.get('load_average_after')} after ({setup.get('cpus')} CPUs, shared)\n\n"
            + core.table(["where", "from -> to", "n", "median ms", "max ms"], rows)
            + "".join(f"\n\n{e}" for e in errors))


def _browser_tier(r: Result) -> str:
    """Results of bench_panel_latency.py --tier: each browser-tier run beside CPU hogs."""
    rows = [[t.get("run"), t.get("hog_processes"), t.get("summary"), t.get("wall_s"),
             t.get("load_1min_before"), f"`{t.get('log', '')}`"]
            for t in r.doc.get("browser_tier_runs", [])]
    return (f"{r.doc.get('passes_in_a_row')} passing runs in a row\n\n"
            + core.table(["run", "hogs", "pytest", "wall s", "load (1 min) before", "log"],
                         rows))


def _throttled(r: Result) -> str:
    """Results of benchmarks/panel/bench_panel_throttled.py: a panel's state, CPU throttled."""
    rows = [[t.get("rate"), t.get("run_all_to_run_view_s"),
             t.get("run_all_to_state_s") if t.get("state_arrived") else "never",
             t.get("run_views_on_page")] for t in r.doc.get("runs", [])]
    setup = r.doc.get("setup", {})
    return (f"commit {setup.get('commit')}; state allowed {setup.get('wait_s')} s after the "
            f"view; load average {setup.get('load_average_before')} before\n\n"
            + core.table(["CPU throttling", "Run All -> run view s", "Run All -> state s",
                          "run views on the page"], rows))


def _multi_gpu(results: list[Result]) -> str:
    """Results of gpu_checks/multi_gpu_dask.py: every sweep of every run, one row each, and
    each run's targets (the scaling target reads the median of the run's repeats)."""
    rows, runs = [], []
    for r in results:
        doc = r.doc
        knobs = (f"{doc.get('measures_per_gpu', 4)} running"
                 + (f", {doc['queued_per_gpu']} queued" if doc.get("queued_per_gpu") else "")
                 + (f", reserve {doc['boundary_reserve_per_gpu']}"
                    if "boundary_reserve_per_gpu" in doc else ""))
        sweeps = doc.get("sweeps", [])
        paired = {s.get("repeat", 0) for s in sweeps if s.get("gpus") == 1}
        for sweep in sweeps:
            busy = (sweep.get("phases") or {}).get("measure_busy_share") or {}
            rows.append([r.run.get("date"), r.run.get("device"), knobs,
                         sweep.get("repeat", 0), sweep.get("gpus"), sweep.get("batch"),
                         sweep.get("sweep_s"),
                         sweep.get("speedup") if sweep.get("repeat", 0) in paired else None,
                         ", ".join(f"{v:.2f}" for v in busy.values()) or None])
        targets = doc.get("targets") or {}
        twos = [s["speedup"] for s in sweeps
                if s.get("gpus") == 2 and s.get("repeat", 0) in paired]
        middle = statistics.median(twos) if twos else None
        runs.append([r.run.get("date"), middle,
                     ", ".join(str(s["speedup"]) for s in sweeps if s.get("gpus") == 2
                               and s.get("repeat", 0) in paired) if len(twos) > 1 else None,
                     targets.get("picks_equal_1_vs_2"),
                     targets.get("cluster_pick_equals_direct"),
                     targets.get("cli_cluster_faster"), targets.get("kill_loses_nothing"),
                     f"`{r.run.get('command')}`"])
    return ("Every sweep: an exhaustive sweep of the run's kernel (fused_add_rmsnorm decode "
            "bf16, 1,184 configs) on 1 and 2 GPUs; speedup against the same repeat's 1-GPU "
            "sweep (— where the run had none). Runs before 2026-11-27T12:24Z do not record "
            "their queue settings (the batch-end reserve came at 09:56Z).\n\n"
            + core.table(["date", "device", "measure tasks per GPU", "repeat", "GPUs",
                          "batch", "sweep s", "speedup", "busy share per GPU"], rows)
            + "\n\nEach run's targets (issue 29; — not run; the speedup from the sweeps "
            "above, the rest as the run recorded them):\n\n"
            + core.table(["date", "2-GPU speedup (median)", "each repeat", "picks equal",
                          "cluster pick = direct", "CLI cluster faster", "kill lost nothing",
                          "command"], runs))


RENDERERS: dict[str, Renderer] = {
    "peers_tune": Renderer("Ours = the pick of `workbench tune`, against every peer under "
                           "three methods", _each(_peers_tune)),
    "dirty_l2": Renderer("Where do_bench's time goes: launch gap and kernel by CUPTI",
                         _each(_dirty_l2)),
    "peers_methods": Renderer("Tuned vs peers under three timing methods",
                              _each(lambda r: shapes.peers_methods_section(r.rel))),
    "pick_methods": Renderer("silu_and_mul: the pick chosen over all three methods",
                             _each(lambda r: shapes.pick_methods_section(r.rel))),
    "conditions": Renderer("Picks that hold: finalists under every cache condition",
                           _each(lambda r: shapes.conditions_section(r.rel))),
    "peers_one_method": Renderer("Tuned vs peers, one method",
                                 _each(lambda r: core.peers_section(r.rel))),
    "dispatch_sweep": Renderer("Many shapes: range widening and a dispatch table",
                               _each(lambda r: shapes.dispatch_section(r.rel))),
    "kernel_tuner_compare": Renderer("Throughput vs Kernel Tuner",
                                     _each(lambda r: core.kt_section(r.rel))),
    "repeatability": Renderer("Repeatability", _fixed(core.repeat_section)),
    "timing_method_ab": Renderer("Timing method: between-process spread",
                                 _fixed(core.timing_method_section)),
    "cupti_spread": Renderer("Timer: CUPTI kernel durations vs event pairs",
                             _fixed(core.cupti_section)),
    "estimators": Renderer("Timer ticks: which median repeats", _fixed(core.estimator_section)),
    "ncu_repeatability": Renderer("Kernel durations by Nsight Compute", _fixed(core.ncu_section)),
    "strategies": Renderer("Search strategies: sample efficiency",
                           _fixed(core.strategies_section)),
    "strategies_small_budget": Renderer("Search strategies: quality at small budgets",
                                        _each(lambda r: small_budget.render(r.doc))),
    "compile_throughput": Renderer("CPU-side costs (space, nvcc, check, panel)",
                                   _fixed(core.cpu_section)),
    "dask_overhead": Renderer("Dask runner: overhead and simulated scaling",
                              _fixed(core.dask_section)),
    "multi_gpu_dask": Renderer("Multi-GPU: exhaustive sweeps on 1 and 2 GPUs through Dask",
                               _multi_gpu),
    "stage1_corpus": Renderer("Stage 1 on the corpus: templater vs expert",
                              lambda results: stage1_summary.render(results) + "\n\n"
                              + _each(_stage1)(results)),
    "stage1_probe": Renderer("Stage 1 probes: named configs of a lift against its expert",
                             _each(_stage1_probe)),
    "lab_latency": Renderer("Lab endpoints' latency beside hostile inits", _each(_lab_latency)),
    "panel_lab_browser": Renderer("Sidebar on a 60k-trial store and five panels open, in "
                                  "JupyterLab and Chromium", _each(_lab_browser)),
    "panel_browser_tier": Renderer("The browser tier beside CPU hogs", _each(_browser_tier)),
    "panel_throttled": Renderer("A panel's state with Chromium's CPU throttled",
                                _each(_throttled)),
}
