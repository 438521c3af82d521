"""The small-budget replay (benchmarks/search/bench_small_budget.py): best time found after
20, 40 and 64 evaluations over the recorded optimum, per group and per problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def render(doc: Mapping[str, Any]) -> str:
    """Markdown: the per-group summary, then median / worst seed per problem and budget."""
    budgets = [str(b) for b in doc["budgets"]]
    names = list(next(iter(doc["summary"].values())))
    seeds = doc["seeds"]
    out = [f"Best time found over the recording's optimum after {', '.join(budgets)} "
           f"evaluations (each run first measures the template's default); seeds per "
           f"strategy: {seeds}. A REPLAY of the H100 sweep recordings on the CPU. Held out "
           f"(chosen before any strategy was tuned on the replays): `{doc['held_out']}`. "
           "*small*: the same recordings with knobs pinned at their defaults (73-126 "
           "configs). Summary: geometric mean over the group's problems of the median seed "
           "/ of the worst seed, and the single worst run.", ""]
    head = ["group", "strategy", *[f"@{b} median / worst / worst run" for b in budgets]]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, by_name in doc["summary"].items():
        for name, cells in by_name.items():
            out.append(f"| {group} | {name} | " + " | ".join(
                f"{cells[b]['geomean_median']:.3f} / {cells[b]['geomean_worst']:.3f} / "
                f"{cells[b]['max_worst']:.3f}" for b in budgets) + " |")
    head = ["problem", "group", "configs", *[f"{n} @{b}" for b in budgets for n in names]]
    out += ["", "Per problem, median / worst seed:", "",
            "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in doc["problems"]:
        cells = [row["name"], row["group"], str(row["recorded_in_space"])]
        cells += [f"{row['strategies'][n][b]['median']:.3f} / "
                  f"{row['strategies'][n][b]['worst']:.3f}" for b in budgets for n in names]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
