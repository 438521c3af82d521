"""Summarise a `workbench tune --sweep` store and its `workbench dispatch --eval` log into the
JSON that benchmarks/readme_tables/shapes.py renders (CPU; the measurements came from the GPU).

    python benchmarks/search/dispatch_summary.py STORE.sqlite EVAL.log TUNE.log --out summary.json

A store that also holds `dispatch --cross` measurements (a session noted "dispatch --cross")
gets, per shape, how many configs its search and the cross pass measured, and the
leave-one-out of the same data recomputed under both table rules (bucket interpolation on,
and off: each tuned shape alone decides, the rule of the 2026-11-24 table), so what the
cross-measured data and what the rule each contribute can be read apart.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.dispatch import leave_one_out, median_loss_pct  # noqa: E402
from workbench.core.records import Config, Status  # noqa: E402
from workbench.store.sqlite import SQLiteStore  # noqa: E402

ROW = re.compile(r"^\s+(\S+)\s+->\s+(\S+)\s+([+-][\d.]+) %\s+(\{.*\})$")
HEAD = re.compile(r"^silu_and_mul @ (\S+) ")
CROSS = "dispatch --cross"


def _loo(times: dict[str, dict[Config, float]], sizes: dict[str, dict[str, int]],
         found_at: dict[Config, set[str]], interpolate: bool) -> dict[str, Any]:
    rows = leave_one_out("silu_and_mul", "bf16", times, sizes, 3.0, found_at=found_at,
                         interpolate=interpolate)
    return {"median_loss_pct": median_loss_pct(rows),
            "rows": [{"shape": r.shape, "nearest": r.nearest, "loss_pct": r.loss_pct,
                      "config": dict(r.config)} for r in rows]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("eval_log")
    ap.add_argument("tune_log")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    store = SQLiteStore(args.store)
    cross = {s.id for s in store.sessions() if s.notes.startswith(CROSS)}
    shapes: dict[str, dict] = {}
    times: dict[str, dict[Config, float]] = {}
    found_at: dict[Config, set[str]] = {}
    for t in store.trials():
        r = t.result
        crossed = t.session_id in cross
        row = shapes.setdefault(r.shape, {"evaluated": 0, "cross_measured": 0, "best_us": None,
                                          "best": None, "max_row_split": 0,
                                          "best_in_range_us": None})
        row["cross_measured" if crossed else "evaluated"] += 1
        if r.status is not Status.OK or not r.median_us:
            continue
        times.setdefault(r.shape, {})[r.config] = min(r.median_us, times.get(r.shape, {}).get(
            r.config, float("inf")))
        if crossed:
            continue
        found_at.setdefault(r.config, set()).add(r.shape)
        row["max_row_split"] = max(row["max_row_split"], int(r.config.get("ROW_SPLIT", 0)))
        if int(r.config.get("ROW_SPLIT", 0)) <= 8 and (row["best_in_range_us"] is None
                                                        or r.median_us < row["best_in_range_us"]):
            row["best_in_range_us"] = r.median_us  # within kernel.toml's ROW_SPLIT 1..8
        if row["best_us"] is None or r.median_us < row["best_us"]:
            row["best_us"], row["best"] = r.median_us, dict(r.config)
    widened: dict[str, list[str]] = {}
    current = None
    for line in Path(args.tune_log).read_text().splitlines():
        m = HEAD.match(line)
        if m:
            current = m.group(1)
        elif line.startswith("  widen:") and current is not None:
            widened.setdefault(current, []).append(line.strip())
    loo = []
    text = Path(args.eval_log).read_text()
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            loo.append({"shape": m.group(1), "nearest": m.group(2),
                        "loss_pct": float(m.group(3)), "config": m.group(4)})
    med = re.search(r"median loss: ([\d.]+) %", text)
    configs = re.search(r"(\d+) configs for (\d+) shapes", text)
    doc: dict[str, Any] = {"shapes": shapes, "widen_log": widened, "leave_one_out": loo,
                           "median_loss_pct": float(med.group(1)) if med else None,
                           "table_configs": int(configs.group(1)) if configs else None,
                           "table_shapes": int(configs.group(2)) if configs else None}
    if cross:
        sizes = {s: {"tokens": int(s.removeprefix("tokens")), "d": 11008} for s in times}
        doc["recomputed"] = {"interpolated": _loo(times, sizes, found_at, True),
                             "point_rule": _loo(times, sizes, found_at, False)}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
