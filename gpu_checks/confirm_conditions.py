"""Picks that hold: each recording's finalists re-measured under every cache condition on the
GPU machine, and the declared rule's pick (workbench.core.conditions).

For each kernel and named shape (bf16): the recording's 5 fastest configs and the
template's default are measured, with the baseline, under read eviction, write eviction,
warm and in a CUDA graph (round 1); the rule picks; the pick and the baseline are measured
again under every condition (round 2, reported). Writes one JSON per run.

    python gpu_checks/confirm_conditions.py --out results.json [--kernels ...] [--shapes ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.conditions import DEFAULT_CONDITIONS, condition_table  # noqa: E402
from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Config, Status, TrialResult  # noqa: E402
from workbench.engine.bench import BenchSettings  # noqa: E402
from workbench.engine.conditions import GRAPH_LAUNCHES, confirm_under_conditions  # noqa: E402
from workbench.engine.recording import load_recording  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402

KERNELS = ("silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse")


def _finalists(folder: Any, shape: str, dtype: str, count: int) -> list[TrialResult]:
    recording = load_recording(sorted((folder.path / "recordings").glob("*.json"))[-1])
    defaults = folder.template.default_config()
    out = [TrialResult(config=Config({**defaults, **t.config}), shape=shape, dtype=dtype,
                       status=Status.OK, timing=t.timing)
           for t in recording.fastest(shape, dtype, count)]
    if all(r.config != defaults for r in out):
        out.append(TrialResult(config=defaults, shape=shape, dtype=dtype, status=Status.OK))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", nargs="*", default=list(KERNELS))
    ap.add_argument("--shapes", nargs="*", default=["odd", "decode", "prefill", "large"])
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--finalists", type=int, default=5)
    ap.add_argument("--rse", type=float, default=0.25)
    args = ap.parse_args()
    settings = BenchSettings(target_rse_pct=args.rse)
    doc: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                           "python": platform.python_version(),
                           "conditions": list(DEFAULT_CONDITIONS),
                           "graph_launches": GRAPH_LAUNCHES,
                           "settings": settings.to_dict(), "cases": []}
    for name in args.kernels:
        folder = load_kernel_folder(ROOT / "sample_kernels" / name)
        with LocalRunner(folder, settings=settings) as runner:
            doc.update(device=runner.device.name, timer=runner.timer_note,
                       driver=runner.hello.nvml.get("driver"),
                       cuda=runner.hello.cuda_driver_version)
            for shape in args.shapes:
                began = time.perf_counter()
                finalists = _finalists(folder, shape, args.dtype, args.finalists)
                got = confirm_under_conditions(runner, finalists, DEFAULT_CONDITIONS)
                case: dict[str, Any] = {"kernel": name, "shape": shape, "dtype": args.dtype,
                                        "finalists": [dict(f.config) for f in finalists],
                                        "search_median_us": [f.median_us for f in finalists],
                                        "seconds": round(time.perf_counter() - began, 1)}
                if isinstance(got, str):
                    case["error"] = got
                    print(f"{name} {shape}: {got}", flush=True)
                else:
                    case.update(rule=got.selection.rule.describe(), pick=dict(got.config),
                                holds=got.holds, round1=condition_table(got.selection),
                                round2=condition_table(got.reported),
                                search_best=dict(finalists[0].config),
                                pick_is_search_best=got.config == finalists[0].config)
                    print(f"{name} {shape} ({case['seconds']} s)\n{got.summary()}", flush=True)
                doc["cases"].append(case)
                Path(args.out).write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
