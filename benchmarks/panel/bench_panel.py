"""Per-push update cost of the panel at 100 / 1,000 / 10,000 trials (kernel side), and the
size of a report notebook of 10,000 trials.

One push = snapshot of the trial table + per-trace arrays (compute) + the progress, top-N
and failure tables + ONE run-view message (text and charts, numbers as binary buffers),
serialized to JSON as the kernel's session would. Measured in this process with ipywidgets'
dummy comm (no browser): the cost the kernel pays per push, which the throttle bounds at 4
pushes per second (fewer when the browser draws slower), and the bytes each push sends.

Trial records are the real recorded H100 trials of silu_and_mul, cycled to reach the count,
when a recording exists; otherwise deterministic stand-in records (labelled as such in the
JSON: they exercise the UI, they are not measurements).

    python benchmarks/panel/bench_panel.py [--out benchmarks/results/panel_updates.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from workbench.api import Workbench
from workbench.core.events import TrialFinished
from workbench.core.records import Config, Status, Timing, TrialResult
from workbench.ui.figures import trace_updates
from workbench.ui.panel import WorkbenchPanel
from workbench.ui.state_view import RunView

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "sample_kernels" / "silu_and_mul"
COUNTS = (100, 1_000, 10_000)
REPEATS = 7


def _records(wb: Workbench, n: int) -> tuple[list[TrialResult], str]:
    recs = sorted((KERNEL / "recordings").glob("*.json"))
    if recs:
        from workbench.engine.recording import load_recording

        trials = list(load_recording(recs[-1]).trials)
        if trials:
            return [trials[i % len(trials)] for i in range(n)], f"recording {recs[-1].name} (cycled)"
    space = list(wb.folder.space("decode", "bf16"))
    out = []
    for i in range(n):
        config = space[i % len(space)]
        if i % 9 == 4:
            out.append(TrialResult(config=Config(config), shape="decode", dtype="bf16",
                                   status=Status.COMPILE_ERROR, reason="stand-in failure"))
            continue
        us = 20.0 + (i * 7919 % 1000) / 50.0
        t = Timing(median_us=us, min_us=us, q1_us=us, q3_us=us, mean_us=us, reps=10,
                   rse_median_pct=0.5, l2_flushed=True)
        out.append(TrialResult(config=Config(config), shape="decode", dtype="bf16",
                               status=Status.OK, timing=t))
    return out, "deterministic stand-in records (UI load only, not measurements)"


def _count_messages(view: RunView) -> list[tuple[int, int]]:
    """From now on, serialize every message ``view`` sends as the kernel's session would
    (JSON, binary buffers apart) and record (JSON bytes, binary bytes) per message."""
    sizes: list[tuple[int, int]] = []

    def send(msg: dict[str, object], buffers: list[memoryview] | None = None) -> None:
        text = json.dumps(msg, separators=(",", ":"), allow_nan=False)
        sizes.append((len(text.encode()), sum(memoryview(b).nbytes for b in buffers or [])))

    view._send = send  # type: ignore[method-assign]
    return sizes


def _report_size(wb: Workbench, records: list[TrialResult], tmp: Path) -> dict[str, object]:
    """Bytes of the report notebook ``wb.report`` writes for ``records``."""
    import nbformat

    path = wb.report(tmp / "report.ipynb", results=records)
    nb = nbformat.read(path, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    charts = sum(1 for o in outputs if "image/png" in o.get("data", {}))
    from workbench.ui.report import TABLE_ROWS

    return {"trials": len(records), "bytes": path.stat().st_size, "charts": charts,
            "rows_listed": min(TABLE_ROWS, len(records))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "panel_updates.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wb = Workbench(KERNEL, store=Path(tmp) / "bench.sqlite")
        results = []
        source = ""
        for n in COUNTS:
            panel = WorkbenchPanel(wb)
            panel.pusher.close(flush=False)  # push by hand, timed
            records, source = _records(wb, n)
            for i, r in enumerate(records):
                panel._on_event(TrialFinished(result=r, index=i))
            panel.search.budget_evaluations = n
            sizes = _count_messages(panel.run_view)
            compute, total = [], []
            for _ in range(REPEATS):
                t0 = time.perf_counter()
                trace_updates(panel.table.snapshot(), panel.layout)
                t1 = time.perf_counter()
                panel.search.push()
                t2 = time.perf_counter()
                compute.append(t1 - t0)
                total.append(t2 - t1)
            per_push = sizes[-REPEATS:]
            results.append({"trials": n, "push_median_ms": round(1e3 * statistics.median(total), 2),
                            "push_max_ms": round(1e3 * max(total), 2),
                            "compute_median_ms": round(1e3 * statistics.median(compute), 2),
                            "messages_per_push": len(sizes) / REPEATS,
                            "json_bytes": max(j for j, _ in per_push),
                            "binary_bytes": max(b for _, b in per_push),
                            "repeats": REPEATS})
            panel.close()
            print(results[-1])
        report = _report_size(wb, _records(wb, COUNTS[-1])[0], Path(tmp))
        print(report)
    doc = {"what": "kernel-side cost of one panel push (compute + tables + one run-view "
                   "message serialized as JSON, numbers as binary buffers)",
           "trials_source": source, "max_pushes_per_s": 4,
           "python": platform.python_version(), "machine": platform.machine(),
           "date": time.strftime("%Y-%m-%d"), "results": results, "report": report}
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
