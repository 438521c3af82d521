"""Markdown for benchmarks/README.md from ``peers.py --tune`` results: per (kernel, shape),
ours / the best same-layout peer under each method, what `workbench tune` picked and
whether the pick held under every cache condition; then the counts and geometric means
per shape set (named: in the kernel.toml; unseen: peer_methods.UNSEEN, looked at while
iterating; held out: peer_methods.HELD_OUT, measured only in the final run).

    python benchmarks/readme.py (renders every results/peers/*/peers-tuned-*.json)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

METHODS = ("harness", "do_bench", "graph")
SHORT = {"BLOCK_THREADS": "thr", "VEC_BYTES": "vec", "ROW_SPLIT": "split",
         "TOKENS_PER_BLOCK": "tok/blk", "ROWS_PER_BLOCK": "rows/blk", "FAST_EXP": "fast",
         "THREADS_PER_ROW": "thr/row"}


def shape_set(row: dict[str, Any]) -> str:
    return "held out" if row.get("held_out") else "unseen" if row.get("unseen") else "named"


def _sizes(row: dict[str, Any]) -> str:
    return "×".join(str(v) for v in row["sizes"].values())


def _pick(row: dict[str, Any]) -> str:
    cfg = row.get("tune", {}).get("pick") or row["impls"].get("workbench best", {}).get("config", {})
    parts = []
    for k, v in cfg.items():
        if k.endswith("_CONST"):
            if v:
                parts.append(f"{k.removesuffix('_CONST').lower()} compiled in")
        elif k in ("BLOCK_THREADS", "VEC_BYTES", "PDL", "FAST_EXP") or v not in (0, 1):
            parts.append(f"{SHORT.get(k, k)} {v}")
    return ", ".join(parts)


def _held(row: dict[str, Any]) -> str:
    summary = row.get("tune", {}).get("summary", "")
    if "; holds" in summary:
        return "yes"
    if "DOES NOT HOLD" in summary:
        return "no: " + summary.split("DOES NOT HOLD (", 1)[1].split("\n", 1)[0].rstrip(")")
    return "n/a"


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| set | kernel | shape | ours µs (harness) | harness | do_bench | graph | "
             "`workbench tune` pick | pick holds under every condition |",
             "|---|---|---|---|---|---|---|---|---|"]
    ratios: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        v = r.get("verdicts") or {}
        ours = r["impls"].get("workbench best", {}).get("median_us")
        cells = []
        for m in METHODS:
            if m not in v:
                cells.append("n/a")
                continue
            ratio = v[m]["ratio"]
            ratios.setdefault((shape_set(r), m), []).append(ratio)
            cell = f"{ratio:.3f} ({v[m]['best_peer']} {v[m]['best_peer_us']:.2f})"
            cells.append(f"**{cell}**" if ratio > 1.0 else cell)
        lines.append(f"| {shape_set(r)} | {r['kernel']} | {r['shape']} ({_sizes(r)}) | "
                     f"{ours:.2f} | " + " | ".join(cells) + f" | {_pick(r)} | {_held(r)} |"
                     if ours else f"| {shape_set(r)} | {r['kernel']} | {r['shape']} | failed | "
                     + " | ".join(cells) + " | | |")
    lines.append("")
    for (group, m), xs in sorted(ratios.items()):
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs))
        lines.append(f"- {group}, {m}: {sum(x <= 1.0 for x in xs)}/{len(xs)} at or below 1.00, "
                     f"geometric mean {gm:.3f}")
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    rows: list[dict[str, Any]] = []
    for p in paths:
        rows += json.loads(Path(p).read_text())["rows"]
    order = {"named": 0, "unseen": 1, "held out": 2}
    rows.sort(key=lambda r: (order[shape_set(r)], r["kernel"]))
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
