"""Summarise a `workbench tune --sweep` store and its `workbench dispatch --eval` log into the
JSON that benchmarks/tables_shapes.py renders (CPU; the measurements came from the GPU).

    python benchmarks/dispatch_summary.py STORE.sqlite EVAL.log TUNE.log --out summary.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.records import Status  # noqa: E402
from workbench.store.sqlite import SQLiteStore  # noqa: E402

ROW = re.compile(r"^\s+(\S+)\s+->\s+(\S+)\s+([+-][\d.]+) %\s+(\{.*\})$")
HEAD = re.compile(r"^silu_and_mul @ (\S+) ")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("eval_log")
    ap.add_argument("tune_log")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    store = SQLiteStore(args.store)
    shapes: dict[str, dict] = {}
    for t in store.trials():
        r = t.result
        row = shapes.setdefault(r.shape, {"evaluated": 0, "best_us": None, "best": None,
                                          "max_row_split": 0, "best_in_range_us": None})
        row["evaluated"] += 1
        row["max_row_split"] = max(row["max_row_split"], int(r.config.get("ROW_SPLIT", 0)))
        if r.status is Status.OK and r.median_us and int(r.config.get("ROW_SPLIT", 0)) <= 8 \
                and (row["best_in_range_us"] is None or r.median_us < row["best_in_range_us"]):
            row["best_in_range_us"] = r.median_us  # within kernel.toml's ROW_SPLIT 1..8
        if r.status is Status.OK and r.median_us and (row["best_us"] is None
                                                      or r.median_us < row["best_us"]):
            row["best_us"], row["best"] = r.median_us, dict(r.config)
    widened, current = {}, None
    for line in Path(args.tune_log).read_text().splitlines():
        m = HEAD.match(line)
        if m:
            current = m.group(1)
        elif line.startswith("  widen:") and current is not None:
            widened.setdefault(current, []).append(line.strip())
    loo = []
    for line in Path(args.eval_log).read_text().splitlines():
        m = ROW.match(line)
        if m:
            loo.append({"shape": m.group(1), "nearest": m.group(2),
                        "loss_pct": float(m.group(3)), "config": m.group(4)})
    med = re.search(r"median loss: ([\d.]+) %", Path(args.eval_log).read_text())
    configs = re.search(r"(\d+) configs for (\d+) shapes", Path(args.eval_log).read_text())
    doc = {"shapes": shapes, "widen_log": widened, "leave_one_out": loo,
           "median_loss_pct": float(med.group(1)) if med else None,
           "table_configs": int(configs.group(1)) if configs else None,
           "table_shapes": int(configs.group(2)) if configs else None}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
