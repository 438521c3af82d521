"""README tables of benchmarks/peers/dirty_l2.py results: per row, do_bench and the CUPTI kernel
time of ours against the best peer under each flush, and the launch gap's range.

    python benchmarks/readme.py (renders every results/peers/*/dirty-l2*.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OURS = ("ours", "ours PDL 0", "baseline")


def best_peer(impls: dict[str, Any], key: str, flush: str | None) -> tuple[str, float] | None:
    def value(e: dict[str, Any]) -> float | None:
        return e.get(key) if flush is None else e.get(flush, {}).get(key)
    timed = [(k, value(e)) for k, e in impls.items()
             if k not in OURS and not k.startswith("ours alt") and "error" not in e]
    timed = [(k, v) for k, v in timed if v is not None]
    return min(timed, key=lambda kv: kv[1]) if timed else None


def cell(impls: dict[str, Any], key: str, flush: str | None, label: str = "ours") -> str:
    ours = impls.get(label, {})
    mine = ours.get(key) if flush is None else ours.get(flush, {}).get(key)
    peer = best_peer(impls, key, flush)
    if mine is None or peer is None:
        return "n/a"
    ratio = mine / peer[1]
    text = f"{mine:.2f} / {peer[1]:.2f} {peer[0]} ({ratio:.3f})"
    return f"**{text}**" if ratio > 1.0 else text


def table(doc: dict[str, Any]) -> str:
    out = ["| kernel | shape | do_bench (2 rounds) | kernel, write flush | kernel, read flush "
           "| kernel, no flush | gap after flush (all impls) |",
           "|---|---|---|---|---|---|---|"]
    for row in doc["rows"]:
        impls = row["impls"]
        if "error" in row or "ours" not in impls:
            continue
        gaps = [e[f]["gap_median_us"] for e in impls.values() if "error" not in e
                for f in ("write", "read") if "gap_median_us" in e.get(f, {})]
        out.append(f"| {row['kernel']} | {row['shape']} | {cell(impls, 'do_bench_us', None)} "
                   f"| {cell(impls, 'kernel_median_us', 'write')} "
                   f"| {cell(impls, 'kernel_median_us', 'read')} "
                   f"| {cell(impls, 'kernel_median_us', 'none')} "
                   f"| {min(gaps):.2f}-{max(gaps):.2f} |")
    return "\n".join(out)


def alternatives(doc: dict[str, Any]) -> str:
    out = ["| shape | config | kernel, write | kernel, read | kernel, no flush |",
           "|---|---|---|---|---|"]
    for row in doc["rows"]:
        for label in [k for k in row["impls"] if k.startswith("ours")] + ["liger"]:
            e = row["impls"].get(label, {})
            if "error" in e or "write" not in e:
                continue
            out.append(f"| {row['shape']} | {label} | {e['write']['kernel_median_us']:.2f} | "
                       f"{e['read']['kernel_median_us']:.2f} | "
                       f"{e['none']['kernel_median_us']:.2f} |")
    return "\n".join(out)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        data = json.loads(Path(arg).read_text())
        print(alternatives(data) if any(k.startswith("ours alt") for r in data["rows"]
                                        for k in r["impls"]) else table(data))
        print()
