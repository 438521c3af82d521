"""Repeatability: the top configs of each committed recording re-measured in a fresh worker.

For every kernel, at each (shape, dtype) asked for, the 5 fastest ok configs of the
newest recording are measured again by a new LocalRunner (a new worker process, new
random inputs, same bench settings) and the medians compared. Target: within 1 %.

    python benchmarks/repeatability.py --out results.json [--shapes decode large]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Status  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.recording import load_recording, recording_paths  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", nargs="*", default=["decode", "large"])
    ap.add_argument("--dtypes", nargs="*", default=["bf16"])
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for name in KERNELS:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        recording = load_recording(recording_paths(folder.path)[-1])
        settings = BenchSettings.from_dict(dict(recording.bench)) if recording.bench else None
        with LocalRunner(folder, settings=settings, seed=12345) as runner:
            for shape in args.shapes:
                for dtype in args.dtypes:
                    ok = sorted((t for t in recording.trials if t.shape == shape
                                 and t.dtype == dtype and t.status is Status.OK and t.timing),
                                key=lambda t: t.timing.median_us)[: args.top]  # type: ignore[union-attr]
                    fresh = list(runner.measure([Candidate(t.config, shape, dtype) for t in ok]))
                    for before, after in zip(ok, fresh, strict=True):
                        assert before.timing is not None
                        row = {"kernel": name, "shape": shape, "dtype": dtype,
                               "config": dict(before.config),
                               "recorded_median_us": before.timing.median_us,
                               "status": after.status.value,
                               "fresh_median_us": after.median_us}
                        if after.median_us:
                            row["diff_pct"] = 100 * (after.median_us / before.timing.median_us - 1)
                        rows.append(row)
                        print(f"{name:22s} {shape:7s} {dtype} {before.timing.median_us:8.2f} -> "
                              f"{after.median_us or float('nan'):8.2f} us "
                              f"({row.get('diff_pct', float('nan')):+.2f} %)", flush=True)
    within = [r for r in rows if abs(r.get("diff_pct", 100)) <= 1.0]
    doc = {"date": dt.date.today().isoformat(), "rows": rows,
           "within_1pct": len(within), "total": len(rows)}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(f"within 1 %: {len(within)} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
