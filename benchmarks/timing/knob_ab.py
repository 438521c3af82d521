"""Does a new knob pay? Its values on the recording's finalists, interleaved, in one worker.

The ``--top`` fastest ok configs of the newest recording at each (shape, dtype) are measured
with every value of ``--knob`` (the recording predates the knob: it measured its default),
in ``--rounds`` rounds; each round visits all (config, value) candidates in a fresh random
order, so drift in time lands on every value alike. Per candidate: the median of its round
medians; per value: its times relative to the default value on the same configs (geometric
mean and range), and the fastest candidate. Run on the GPU machine:

    python benchmarks/timing/knob_ab.py merge_attn_states_lse --knob CACHE_HINT --values 0 1 \\
        --shapes decode large --out knob_ab.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import random
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.recording import load_recording, recording_paths  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repeatability import _top  # noqa: E402


def run(args: argparse.Namespace) -> dict[str, Any]:
    folder = load_kernel_folder(ROOT / "sample_kernels" / args.kernel)
    knobs = [p.name for p in folder.template.params]
    if args.knob not in knobs:
        raise SystemExit(f"{folder.name}: no knob {args.knob!r} in kernel.toml "
                         f"(knobs: {', '.join(knobs)})")
    recording = load_recording(recording_paths(folder.path)[-1])
    defaults = folder.template.default_config()
    default_value = defaults[args.knob]
    settings = BenchSettings.from_dict({**dict(recording.bench or {}),
                                        **json.loads(args.settings)})
    rng = random.Random(args.seed)
    cases: list[dict[str, Any]] = []
    with LocalRunner(folder, settings=settings, seed=args.seed) as runner:
        for shape in args.shapes:
            for dtype in args.dtypes:
                finalists = _top(recording, shape, dtype, args.top, defaults)
                cands = [Candidate(Config({**t.config, args.knob: v}), shape, dtype)
                         for t in finalists for v in args.values]
                medians: dict[int, list[float]] = {i: [] for i in range(len(cands))}
                status: dict[int, str] = {}
                for _ in range(args.rounds):
                    order = list(range(len(cands)))
                    rng.shuffle(order)
                    index = {cands[i].config: i for i in order}
                    # results come when ready, not in the order asked: pair them by config;
                    # each round times afresh under the search's condition
                    for result in runner.measure([cands[i] for i in order],
                                                 condition=runner.search_condition):
                        i = index[result.config]
                        status[i] = f"{result.status.value} {result.reason}".strip()
                        if result.median_us:
                            medians[i].append(result.median_us)
                for i, cand in enumerate(cands):
                    row = {"shape": shape, "dtype": dtype, "config": dict(cand.config),
                           "value": cand.config[args.knob], "status": status.get(i, ""),
                           "round_medians_us": medians[i],
                           "median_us": statistics.median(medians[i]) if medians[i] else None}
                    cases.append(row)
                    print(f"{shape:8s} {dtype} {args.knob}={row['value']!s:4s} "
                          f"{row['median_us'] or float('nan'):8.3f} us  {row['status'][:60]}"
                          f"  {dict(cand.config)}", flush=True)
    return {"date": dt.date.today().isoformat(), "kernel": folder.name, "knob": args.knob,
            "values": args.values, "default": default_value, "rounds": args.rounds,
            "top": args.top, "recording": recording_paths(folder.path)[-1].name,
            "settings": settings.to_dict(), "cases": cases,
            "summary": summarize(cases, args.knob, args.values, default_value)}


def summarize(cases: list[dict[str, Any]], knob: str, values: list[Any],
              default: Any) -> dict[str, Any]:
    """Per (shape, dtype) and value: time relative to the default value on the same configs
    (geometric mean, min, max) and the fastest candidate with that value."""
    def others(c: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in c["config"].items() if k != knob}, sort_keys=True)

    out: dict[str, Any] = {}
    for shape, dtype in sorted({(c["shape"], c["dtype"]) for c in cases}):
        mine = [c for c in cases if (c["shape"], c["dtype"]) == (shape, dtype) and c["median_us"]]
        ref = {others(c): c["median_us"] for c in mine if c["value"] == default}
        per_value: dict[str, Any] = {}
        for value in values:
            with_value = [c for c in mine if c["value"] == value]
            ratios = [c["median_us"] / ref[others(c)] for c in with_value if others(c) in ref]
            if ratios:
                per_value[str(value)] = {
                    "vs_default_geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)),
                    "vs_default_min": min(ratios), "vs_default_max": max(ratios),
                    "best_us": min(c["median_us"] for c in with_value)}
        out[f"{shape}/{dtype}"] = per_value
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernel")
    ap.add_argument("--knob", required=True)
    ap.add_argument("--values", nargs="+", type=json.loads, required=True)
    ap.add_argument("--shapes", nargs="+", default=["odd", "decode", "prefill", "large"])
    ap.add_argument("--dtypes", nargs="+", default=["bf16"])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--settings", default="{}", help="BenchSettings fields as JSON")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    doc = run(args)
    Path(args.out).write_text(json.dumps(doc, indent=1))
    for key, per_value in doc["summary"].items():
        for value, s in per_value.items():
            print(f"{key:14s} {args.knob}={value}: x{s['vs_default_geomean']:.4f} vs default "
                  f"({s['vs_default_min']:.4f}-{s['vs_default_max']:.4f}), best {s['best_us']:.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
