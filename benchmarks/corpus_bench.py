"""Corpus numbers on the GPU: for every kernel folder of benchmarks/corpus (then, last and
reported apart, benchmarks/corpus_holdout): the knobs the offline templater lifted, the
space-wide correctness gate's configs (workbench.llm.space_gate: defaults, corners, a seeded
sample of 32 at the check shape) verified and timed by the runner,
a guided 120-evaluation tune at the large shape (statuses counted), the speedup of the
confirmed best config over the kernel as written, and both as % of a device-to-device copy
of the same bytes timed in the same run.

    python3 benchmarks/corpus_bench.py --out $OUT [--set corpus,holdout] [--budget 120]
        [--conditions read] [--deadline-s 360]

Writes $OUT/corpus_<set>.json (device, driver, CUDA, date, the run's settings) and one
SQLite store per kernel (under ``--stores``, default $OUT). For 2-D tiled kernels the tune report's finalists carry their L2
hit rates (Nsight Compute, where ``ncu`` is present), kept under ``tune.l2``. A kernel not
started before ``--deadline-s`` (seconds since the start) is recorded as skipped.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.api import Workbench  # noqa: E402
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Status  # noqa: E402
from workbench.core.template import KernelTemplate  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402
from workbench.templater import offline_template  # noqa: E402


def template_for(folder: KernelFolder) -> tuple[KernelTemplate, str]:
    """The folder's approved template (``propose --write``), else the offline templater's."""
    if getattr(folder, "has_template", True) and folder.template.params:
        return folder.template, "kernel folder [template]"
    return offline_template(folder).template, "offline templater (run here)"


def llm_template(folder: KernelFolder, transcript: Path) -> tuple[KernelTemplate, str, dict[str, Any]]:
    """Stage 1 through the LLM path: the real openai client against the loopback transcript
    server (a hand-written, replayed reply: see the transcript's description)."""
    from workbench.agent import propose_only
    from workbench.llm.client import LLMClient, LLMSettings
    from workbench.testing.openai_server import OpenAITranscriptServer, Transcript

    server = OpenAITranscriptServer(Transcript.load(transcript)).start()
    client = LLMClient(LLMSettings(model="transcript", api_key="sk-transcript-not-a-key",
                                   base_url=server.base_url))
    try:
        proposed = propose_only(folder, client)
    finally:
        client.close()
        server.stop()
    report = proposed.report
    info = {"transcript": transcript.name, "requests": len(server.requests),
            "validation": report.status if report is not None else "none",
            "messages": report.messages() if report is not None else []}
    if not isinstance(proposed.template, KernelTemplate):
        raise RuntimeError(f"the proposal failed validation: {info}")
    return proposed.template, f"LLM path (replayed transcript {transcript.name})", info


def bench_kernel(path: Path, out: Path, budget: int, transcript: Path | None = None,
                 conditions: tuple[str, ...] | None = None,
                 strategy: str = "guided") -> dict[str, Any]:
    t0 = time.monotonic()
    folder = load_kernel_folder(path)
    llm_info: dict[str, Any] = {}
    if transcript is not None:
        template, origin, llm_info = llm_template(folder, transcript)
    else:
        template, origin = template_for(folder)
    dtype = folder.dtypes[0]
    large = "large"
    doc: dict[str, Any] = {"kernel": folder.name, "template": origin, "dtype": dtype,
                           "knobs": list(template.param_names),
                           "constraints": [c.text for c in template.constraints]}
    if llm_info:
        doc["llm"] = llm_info
    with LocalRunner(folder, template) as runner:
        check = folder.check_shape
        from workbench.llm.space_gate import gate_configs  # the gate's own config choice

        space = template.space(folder.env(check, dtype))
        configs, kinds = gate_configs(space, template.default_config())
        results = list(runner.measure([Candidate(c, check, dtype) for c in configs]))
        bad = [{"config": dict(r.config), "status": r.status.value, "reason": r.reason[:300]}
               for r in results if r.status is not Status.OK]
        doc["gate"] = {"shape": check, "checked": len(results), "kinds": kinds,
                       "ok": sum(r.status is Status.OK for r in results), "failures": bad}
        tag = "_llm" if transcript is not None else ""
        wb = Workbench(folder, store=out / f"{folder.name}{tag}.sqlite", runner=runner)
        wb.adopt_template(template, origin="offline")  # the template under test
        outcome = wb.tune(large, dtype, strategy=strategy, budget=budget, confirm=5,
                          conditions=conditions)
        statuses: dict[str, int] = {}
        failures: list[dict[str, Any]] = []
        for r in outcome.results:
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
            if r.status.value not in ("ok", "pruned") and len(failures) < 8:
                failures.append({"config": dict(r.config), "status": r.status.value,
                                 "reason": r.reason[:300]})
        copy = runner.copy_timing(large, dtype)
        head = outcome.confirmed or outcome.best
        best_us = head.median_us if head is not None else None
        base_us = outcome.baseline_us
        doc["tune"] = {
            "shape": large, "sizes": dict(folder.shapes[large]), "strategy": strategy,
            "budget": budget, "evaluated": len(outcome.results), "statuses": statuses,
            "failures": failures,
            "baseline_us": base_us, "best_us": best_us,
            "best_config": dict(head.config) if head is not None else None,
            "confirmed": outcome.confirmed is not None,
            "speedup": outcome.speedup.speedup if outcome.speedup else None,
            "speedup_ci95": ([outcome.speedup.low, outcome.speedup.high]
                             if outcome.speedup else None),
            "copy_us": copy.median_us,
            "copy_bytes": copy.bytes_moved,
            "baseline_pct_of_copy": 100 * copy.median_us / base_us if base_us else None,
            "best_pct_of_copy": 100 * copy.median_us / best_us if best_us else None,
            "l2": outcome.l2.to_dict() if outcome.l2 is not None else None,
        }
        doc["device"] = runner.device.name
        doc["timer"] = runner.timer_note
    doc["wall_s"] = round(time.monotonic() - t0, 1)
    return doc


def environment() -> dict[str, Any]:
    info: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                            "host_python": platform.python_version()}
    try:
        import pycuda.driver as drv

        drv.init()
        info["driver_version"] = drv.get_driver_version()
        info["cuda_runtime_build"] = ".".join(map(str, drv.get_version()))
        info["gpu"] = drv.Device(0).name()
    except Exception as exc:  # the worker reports the device anyway
        info["driver_error"] = str(exc)
    import subprocess

    for key, cmd in (("nvidia_smi", ["nvidia-smi", "--query-gpu=name,driver_version",
                                     "--format=csv,noheader"]),
                     ("nvcc", ["nvcc", "--version"])):
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = run.stdout.strip().splitlines()
            info[key] = lines[-1] if lines else ""
        except OSError as exc:
            info[key] = f"unavailable: {exc}"
    return info


def _fmt(value: Any, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def markdown(report: dict[str, Any]) -> str:
    """The README table of one results file."""
    rows = ["| kernel | knobs | gate (check shape) | tune statuses (guided) | as written, % of copy "
            "| best, % of copy | speedup |", "|---|---|---|---|---|---|---|"]
    for k in report["kernels"]:
        if "error" in k or "skipped" in k:
            why = k.get("error") or f"skipped: {k['skipped']}"
            rows.append(f"| {k['kernel']} | {why[:80]} | | | | | |")
            continue
        g, t = k["gate"], k["tune"]
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(t["statuses"].items()))
        rows.append(
            f"| {k['kernel']} | {len(k['knobs'])}: {', '.join(k['knobs'])} | {g['ok']}/{g['checked']} "
            f"| {statuses} | {_fmt(t['baseline_pct_of_copy'], '.0f')} % "
            f"| {_fmt(t['best_pct_of_copy'], '.0f')} % | {_fmt(t['speedup'], '.2f')}× |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--set", default="corpus",
                    help="corpus, holdout or both in order (corpus,holdout)")
    ap.add_argument("--budget", type=int, default=120)
    ap.add_argument("--kernels", default="", help="comma-separated subset")
    ap.add_argument("--conditions", default="",
                    help="the confirmation's cache conditions (default: all; 'read': the "
                         "search's condition only, a shorter run)")
    ap.add_argument("--stores", type=Path, default=None,
                    help="folder for the per-kernel SQLite stores (default: --out)")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="start no kernel after this many seconds (recorded as skipped)")
    ap.add_argument("--table", type=Path, help="print the README table of a results file")
    ap.add_argument("--llm", default="", help="KERNEL=TRANSCRIPT,...: stage 1 through the LLM "
                    "path with a transcript of tests/transcripts (instead of the offline one)")
    args = ap.parse_args()
    if args.table is not None:
        print(markdown(json.loads(args.table.read_text())))
        return 0
    if args.out is None:
        ap.error("--out is required to measure")
    args.out.mkdir(parents=True, exist_ok=True)
    stores = args.stores or args.out
    stores.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    conditions = tuple(c for c in args.conditions.split(",") if c) or None
    llm = dict(pair.split("=", 1) for pair in args.llm.split(",") if pair)
    for which in [w for w in args.set.split(",") if w]:
        if which not in ("corpus", "holdout"):
            ap.error(f"--set: got {which!r}; expected corpus or holdout")
        root = ROOT / "benchmarks" / ("corpus" if which == "corpus" else "corpus_holdout")
        names = [n for n in args.kernels.split(",") if n and (root / n).is_dir()] or sorted(
            p.name for p in root.iterdir() if (p / "kernel.toml").is_file())
        if llm:
            names = list(llm)
        report: dict[str, Any] = {
            "set": which, "environment": environment(), "kernels": [],
            "settings": {"budget": args.budget, "conditions": list(conditions or ["all"]),
                         "deadline_s": args.deadline_s, "confirm": 5, "strategy": "guided"}}
        dest = args.out / f"corpus_{which}{'_llm' if llm else ''}.json"
        for name in names:
            elapsed = time.monotonic() - started
            if args.deadline_s is not None and elapsed > args.deadline_s:
                doc: dict[str, Any] = {"kernel": name, "skipped": f"the run's deadline "
                                       f"({args.deadline_s:.0f} s) had passed ({elapsed:.0f} s)"}
            else:
                transcript = ROOT / "tests" / "transcripts" / llm[name] if name in llm else None
                try:
                    doc = bench_kernel(root / name, stores, args.budget, transcript,
                                       conditions)
                except Exception as exc:  # one kernel's failure is data; the others still run
                    doc = {"kernel": name, "error": f"{type(exc).__name__}: {exc}"[:2000]}
            report["kernels"].append(doc)
            print(json.dumps(doc)[:1500], flush=True)
            dest.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
