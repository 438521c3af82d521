"""Does one config's duration move between evaluations of one worker? (GPU machine)

Written when the between-process runs seemed to show a config's CUPTI duration sitting at
one of a few levels 0.5-4 % apart; those "levels" turned out to be a pairing bug in
``repeatability.py`` (results matched to configs by position; fixed). Single-candidate
sequences like these are immune to it, and they found one stable time per config. Modes:

* default: load the problem ``--loads`` times (new buffers) and evaluate the fastest config
  ``--evals`` times in each load;
* ``--alternate``: the fastest and second fastest config in turn (same buffers);
* ``--predecessors N``: the fastest config right after each of N others, twice over.

Earlier runs also varied the input placements (8 or 1) and the shared-memory carveout;
both left the settings (the worker always rotates 8 placements and leaves the carveout to
the driver) and their results stay in results/.

    python benchmarks/timing/duration_levels.py --out levels.json [--alternate]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.recording import load_recording, recording_paths  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402
from workbench.engine.timing_loop import PLACEMENTS  # noqa: E402

CASES = (("fused_add_rmsnorm", "decode"), ("fused_add_rmsnorm", "large"),
         ("silu_and_mul", "large"), ("silu_and_mul", "decode"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--evals", type=int, default=4)
    ap.add_argument("--predecessors", type=int, default=0,
                    help="evaluate the fastest config right after each of N other configs "
                         "(spread over the recording's ranking), twice over: does the "
                         "config evaluated just before pick the level?")
    ap.add_argument("--alternate", action="store_true",
                    help="evaluate the fastest and the second fastest config in turn, "
                         "without reloading (same buffers, modules cached)")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for name, shape in CASES:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        recording = load_recording(recording_paths(folder.path)[-1])
        base = BenchSettings.from_dict(dict(recording.bench))
        settings = replace(base, timer="cupti", min_reps=100, max_reps=100, max_time_s=2.0)
        ok = sorted((t for t in recording.trials if t.shape == shape and t.dtype == "bf16"
                     and t.timing), key=lambda t: t.timing.median_us if t.timing else 0)
        config = {**folder.template.default_config(), **ok[0].config}
        other = next(s for s in folder.shapes if s != shape)
        with LocalRunner(folder, settings=settings, seed=7) as runner:
            again = runner.search_condition  # each measure call times afresh, never recalls
            if args.predecessors:
                step = max(1, (len(ok) - 1) // args.predecessors)
                others = ok[1::step][:args.predecessors]
                after: dict[int, list[float]] = {i: [] for i in range(len(others))}
                before: dict[int, float] = {}
                for _ in range(2):
                    for i, prev in enumerate(others):
                        [p] = list(runner.measure([Candidate(prev.config, shape, "bf16")],
                                                  condition=again))
                        before[i] = round(p.median_us or float("nan"), 3)
                        [x] = list(runner.measure([Candidate(ok[0].config, shape, "bf16")],
                                                  condition=again))
                        after[i].append(round(x.median_us or float("nan"), 3))
                for i, prev in enumerate(others):
                    rows.append({"kernel": name, "shape": shape, "predecessor": dict(prev.config),
                                 "predecessor_median_us": before[i],
                                 "target_config": dict(ok[0].config),
                                 "target_medians_us": after[i]})
                    print(f"{name:18s} {shape:7s} after {before[i]:9.3f} us config "
                          f"{dict(prev.config)}: target {after[i]}", flush=True)
                continue
            if args.alternate:
                seq: dict[int, list[float]] = {0: [], 1: []}
                for turn in range(2 * args.evals):
                    which = turn % 2
                    [result] = list(runner.measure([Candidate(ok[which].config, shape,
                                                              "bf16")], condition=again))
                    seq[which].append(round(result.median_us or float("nan"), 3))
                rows.append({"kernel": name, "shape": shape, "alternate": True,
                             "configs": [dict(ok[0].config), dict(ok[1].config)],
                             "medians_us": [seq[0], seq[1]]})
                print(f"{name:18s} {shape:7s} alternating: "
                      f"#0 {' '.join(f'{m:8.3f}' for m in seq[0])} | "
                      f"#1 {' '.join(f'{m:8.3f}' for m in seq[1])} us", flush=True)
                continue
            for load in range(args.loads):
                # another shape in between: the worker frees this problem's buffers and
                # allocates new ones when it comes back
                list(runner.measure([Candidate(ok[0].config, other, "bf16")]))
                medians = []
                for _ in range(args.evals):
                    [result] = list(runner.measure([Candidate(ok[0].config, shape, "bf16")],
                                                   condition=again))
                    medians.append(round(result.median_us or float("nan"), 3))
                rows.append({"kernel": name, "shape": shape, "load": load, "config": config,
                             "placements": PLACEMENTS, "medians_us": medians})
                print(f"{name:18s} {shape:7s} load {load}: "
                      f"{' '.join(f'{m:8.3f}' for m in medians)} us", flush=True)
    Path(args.out).write_text(json.dumps({"date": dt.date.today().isoformat(), "rows": rows},
                                         indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
