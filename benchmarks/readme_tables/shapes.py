"""README sections of issue 18 (drawn by benchmarks/readme.py): peers under three timing
methods at named and unseen shapes, and the finalists' per-condition confirmation."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"
METHODS = ("harness", "do_bench", "graph")


def _load(name: str) -> Any:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "—"
        if isinstance(v, float):
            return f"{v:.2f}" if abs(v) < 100 else f"{v:.1f}"
        return str(v)
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def peers_methods_section(name: str = "peers/h100/peers-methods-2026-11-24.json") -> str:
    doc = _load(name)
    if doc is None:
        return "_not run yet_"
    rows, ratios = [], {m: {"named": [], "unseen": []} for m in METHODS}
    for r in doc["rows"]:
        v = r.get("verdicts", {})
        kind = "unseen" if r.get("unseen") else "named"
        cells = []
        for m in METHODS:
            if m in v:
                ratios[m][kind].append(v[m]["ratio"])
                cells.append(f"{v[m]['ratio']:.3f} ({v[m]['best_peer']} "
                             f"{v[m]['best_peer_us']:.2f})")
            else:
                cells.append("—")
        sizes = "×".join(str(x) for x in r["sizes"].values())
        ours = r["impls"].get("workbench best", {})
        rows.append([r["kernel"], f"{r['shape']} ({sizes})", r["dtype"],
                     ours.get("median_us"), *cells,
                     "**disagree**" if v.get("disagree") else "agree"])
    summary = []
    for m in METHODS:
        for kind in ("named", "unseen"):
            vals = ratios[m][kind]
            if vals:
                summary.append(f"{m} {kind}: {sum(x <= 1.0 for x in vals)}/{len(vals)} at or "
                               f"below 1.00, geometric mean {_geomean(vals):.3f}")
    failed = sorted({f"{r['kernel']} {r['shape']} {k}: {e['error'][:110]}"
                     for r in doc["rows"] for k, e in r["impls"].items() if "error" in e})
    no_graph = sorted({f"{k}: {e['graph_error'][:90]}" for r in doc["rows"]
                       for k, e in r["impls"].items() if "graph_error" in e})
    text = (f"{doc['device']}, driver {doc['driver']}, CUDA {doc['cuda']}, torch {doc['torch']}, "
            f"{doc['date']}, bf16. Method: {doc['method']}. Each cell: ours / the best "
            f"same-layout peer that passed the tolerance check under that method (that peer "
            f"and its µs); *disagree*: ours wins under one method and a peer under another. "
            f"Liger's `swiglu_fused_gate_up_forward` (same [tokens, 2d] input, output "
            f"allocated inside the timed call) is the silu_and_mul row's `liger`; the "
            f"two-tensor `swiglu_forward` is kept as `liger split` and not counted. Ours at "
            f"named shapes: the recording's 4 fastest in a selection round of the harness; at "
            f"the `u_*` shapes (in no kernel.toml, chosen here: one token, odd sizes, small "
            f"heads, long rows): configs moved from the recordings' named shapes "
            f"(benchmarks/peers/peer_methods.py: the 2 fastest of each, size knobs set to the shape's "
            f"own value, power-of-two ranges widened 8x) in the same kind of selection round. "
            f"Data: `results/{name}`, log `peers.log` beside it.\n\n")
    text += _table(["kernel", "shape", "dtype", "ours µs (harness)", "harness", "do_bench",
                    "graph", "methods"], rows)
    text += "\n\n" + "\n".join(f"- {s}" for s in summary)
    if failed:
        text += "\n\nPeers that did not run:\n" + "\n".join(f"- {f}" for f in failed)
    if no_graph:
        text += "\n\nNot capturable in a CUDA graph:\n" + "\n".join(f"- {f}" for f in no_graph)
    return text


def conditions_section(name: str = "peers/h100/pick-conditions-2026-11-24.json") -> str:
    doc = _load(name)
    if doc is None:
        return "_not run yet_"
    conds = doc["conditions"]
    rows = []
    for c in doc["cases"]:
        if "error" in c:
            rows.append([c["kernel"], c["shape"], c["error"], *["—"] * (len(conds) + 3)])
            continue
        pick = c["round2"][1]
        base = c["round2"][0]
        best1 = next(r for r in c["round1"][1:] if r["label"] == " ".join(
            f"{k}={v}" for k, v in sorted(c["search_best"].items())))
        cells = [f"{pick[f'{k}_us']:.2f} / {base[f'{k}_us']:.2f} ({pick[f'{k}_ratio']:.3f})"
                 for k in conds]
        search_worst = max(best1[f"{k}_ratio"] for k in conds if best1[f"{k}_ratio"])
        rows.append([c["kernel"], c["shape"], *cells, f"{pick['geomean_ratio']:.3f}",
                     "yes" if c["holds"] else "**no**",
                     "same" if c["pick_is_search_best"]
                     else f"other (search's best: worst condition {search_worst:.3f})"])
    text = (f"{doc['device']}, driver {doc['driver']}, CUDA {doc['cuda']}, {doc['date']}, "
            f"bf16, timer {doc['timer']} (the graph condition: event pair around a graph of "
            f"{doc['graph_launches']} launches, per launch). `gpu_checks/confirm_conditions.py`: "
            f"each recording's 5 fastest configs and the template default, with the baseline, "
            f"measured under every condition (round 1), picked by the default rule (best "
            f"geometric mean of time / baseline over the conditions, never slower than the "
            f"baseline in any), then the pick and the baseline measured again (round 2, shown: "
            f"pick µs / baseline µs (ratio)). Conditions: read = L2 evicted by reading 2x L2 "
            f"(the sweeps' condition), write = L2 left dirty by zeroing 2x L2, warm = no "
            f"eviction, graph = back to back in a CUDA graph. Data: `results/{name}`.\n\n")
    text += _table(["kernel", "shape", *conds, "geomean", "holds", "vs search's best"], rows)
    return text


def dispatch_section(name: str = "search/h100/dispatch-sweep-2026-11-24.json") -> str:
    doc = _load(name)
    if doc is None:
        return "_not run yet_"
    loo = {r["shape"]: r for r in doc["leave_one_out"]}
    rows = []
    for shape, v in doc["shapes"].items():
        gain = v["best_in_range_us"] / v["best_us"] if v.get("best_in_range_us") else None
        r = loo.get(shape, {})
        rows.append([shape, v["evaluated"], v["best_us"], v.get("best_in_range_us"),
                     f"{gain:.3f}" if gain else "—", v["best"].get("ROW_SPLIT"),
                     len(doc["widen_log"].get(shape, [])), r.get("nearest"),
                     f"{r['loss_pct']:+.1f} %" if "loss_pct" in r else "—"])
    needed = sum(1 for v in doc["shapes"].values()
                 if v.get("best_in_range_us") and v["best_in_range_us"] > v["best_us"])
    text = ("NVIDIA H100 80GB HBM3, driver 580.159.04, CUDA 13.0, 2026-11-24, silu_and_mul bf16, "
            "d = 11008, CUPTI timer. `gpu_checks/shapes_run.sh sweep`: `workbench tune --shape "
            "decode --sweep tokens=1..4096:log2 --strategy guided --budget 32 --widen 2 "
            "--widen-budget 12 --confirm 0` (13 shapes tuned in turn, one store), then "
            "`workbench dispatch ... --eval --live` (each shape dispatched by a table built "
            "from the other 12, its loss = the dispatched config's time at the shape over the "
            "shape's own best; dispatched configs its search never timed were measured live, "
            "`dispatch_eval_covering.log`). The shape's own best is the minimum of its search "
            "(biased low by the winner's curse), so the losses lean high. *in range*: the best "
            "config with ROW_SPLIT within kernel.toml's 1..8; *widen rounds*: rounds in which "
            "an edge was found (ROW_SPLIT widened 8 -> 16 -> 32 where it was the edge). "
            f"Summary: `results/{name}` (from the store and the logs by "
            "`benchmarks/search/dispatch_summary.py`); exported table in `search/h100/dispatch-table-silu-and-mul-bf16-2026-11-24.*`.\n\n")
    text += _table(["shape", "evaluated", "best µs", "best µs in range", "in range / best",
                    "best ROW_SPLIT", "widen rounds", "dispatched to (LOO)", "LOO loss"], rows)
    text += (f"\n\n- `--widen` needed (the best config lies outside the curated range): "
             f"{needed} of {len(doc['shapes'])} shapes\n"
             f"- full table: {doc['table_configs']} configs for {doc['table_shapes']} shapes "
             f"within 3 %; leave-one-out median loss {doc['median_loss_pct']:.2f} % "
             f"(target ≤ 3 %: not met)")
    return text


def pick_methods_section(name: str = "peers/h100/peers-silu-pick-methods-2026-11-24.json",
                         before: str = "peers/h100/peers-methods-2026-11-24.json") -> str:
    doc, old = _load(name), _load(before)
    if doc is None or old is None:
        return "_not run yet_"
    earlier = {(r["kernel"], r["shape"]): r for r in old["rows"]}
    rows = []
    for r in doc["rows"]:
        v, w = r["verdicts"], earlier[(r["kernel"], r["shape"])]["verdicts"]
        ours = r["impls"]["workbench best"]
        rows.append([r["kernel"], r["shape"], len(ours.get("selection_round", [])),
                     *(f"{w[m]['ratio']:.3f} → {v[m]['ratio']:.3f} ({v[m]['best_peer']})"
                       for m in METHODS),
                     "yes" if r.get("pick", {}).get("holds") else "no",
                     " ".join(f"{k}={x}" for k, x in sorted(ours["config"].items()))])
    text = (f"{doc['device']}, driver {doc['driver']}, CUDA {doc['cuda']}, {doc['date']}, bf16. "
            "`peers.py --methods --pick-methods`: every finalist (the recording's 4 fastest "
            "plus the other shapes' recorded configs, size knobs specialised, ranges widened "
            "8x) timed under all three methods in the selection round and picked by the "
            "workbench's default rule with the methods standing for conditions (harness = "
            "read, do_bench = write, graph = graph); the reported ratios are a further "
            "measurement. Each cell: ours / best peer before (harness-only pick, table above) "
            "→ after. Data: `results/" + name + "`.\n\n")
    text += _table(["kernel", "shape", "finalists", "harness", "do_bench", "graph",
                    "pick never slower than baseline", "pick"], rows)
    return text
