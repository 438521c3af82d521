"""conv1d_mix7 (benchmarks/corpus_compute_unseen7, spent) at the 'large' shape: the offline
templater's lift at a handful of configs against the expert template at its tune's pick,
timed by the runner the stage-1 benchmark's tunes use (LocalRunner.measure, as
benchmarks/corpus_bench.bench_kernel measures), and the kernel as written in the same run.

Settles what the interior copy of the channel loop (workbench/templater/conv_mix_interior.py)
buys at the expert's region (8 channels x 4 items, 192 threads) and at the 15:04Z pick of
the lift before it (416 threads, 8 channels, 2 items: 436.8 us against the baseline's
1119.5 us; the expert 220.8 us), and whether the interior branch's uniformity matters: the
lift takes the interior copy where every active lane of the warp may
(``__all_sync(__activemask(), wb_full)``, a warp-uniform branch: ptxas reads the filter
through the uniform datapath, 80 registers at the expert's region); the variant
``per_lane`` branches on each lane's own test (92 registers, LDC, on the host's ptxas).

    python3 gpu_checks/conv_mix_probe.py      # writes $OUT/conv_mix_probe.json
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config, Status, TrialResult  # noqa: E402
from workbench.core.template import KernelTemplate  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402
from workbench.templater import offline_template  # noqa: E402

FOLDER = ROOT / "benchmarks" / "corpus_compute_unseen7" / "conv1d_mix7"
SHAPE, DTYPE = "large", "fp32"
#: The lift's configs: the expert's region, the 15:04Z pick, and neighbours along each knob.
LIFT = {
    "expert_like": {"BLOCK_THREADS": 192, "CO_PER_THREAD": 8, "T_ITEMS": 4, "MIX_UNROLL": 2},
    "expert_like_mix0": {"BLOCK_THREADS": 192, "CO_PER_THREAD": 8, "T_ITEMS": 4,
                         "MIX_UNROLL": 0},
    "pick_1504": {"BLOCK_THREADS": 416, "CO_PER_THREAD": 8, "T_ITEMS": 2, "MIX_UNROLL": 0},
    "co8_t8_128": {"BLOCK_THREADS": 128, "CO_PER_THREAD": 8, "T_ITEMS": 8, "MIX_UNROLL": 2},
    "co16_t4_128": {"BLOCK_THREADS": 128, "CO_PER_THREAD": 16, "T_ITEMS": 4,
                    "MIX_UNROLL": 2},
    "co4_t8_256": {"BLOCK_THREADS": 256, "CO_PER_THREAD": 4, "T_ITEMS": 8, "MIX_UNROLL": 2},
    "co8_t4_256": {"BLOCK_THREADS": 256, "CO_PER_THREAD": 8, "T_ITEMS": 4, "MIX_UNROLL": 4},
}
EXPERT_PICK = {"THREADS": 192, "T_ITEMS": 4, "CO": 8, "C_UNROLL": 2, "USE_SMEM": 0}
VOTE = ("#ifdef __CUDA_ARCH__\n  if (__all_sync(__activemask(), wb_full)) {\n#else\n"
        "  if (wb_full) {\n#endif\n")


def row(result: TrialResult, base_us: float | None) -> dict[str, Any]:
    t = result.timing
    median = t.median_us if t is not None else None
    usage = result.usage
    return {"config": dict(result.config), "status": result.status.value,
            "reason": result.reason[:300], "median_us": median,
            "rse_median_pct": t.rse_median_pct if t is not None else None,
            "regs": usage.regs_per_thread if usage is not None else None,
            "spill_bytes": (usage.spill_store_bytes + usage.spill_load_bytes)
            if usage is not None else None,
            "speedup": base_us / median if base_us and median else None}


def timed(folder: Any, template: KernelTemplate, configs: dict[str, dict[str, int]],
          base: bool) -> tuple[dict[str, Any], float | None]:
    out: dict[str, Any] = {}
    with LocalRunner(folder, template) as runner:
        base_us = None
        if base:
            b = runner.baseline(SHAPE, DTYPE)
            base_us = b.timing.median_us if b.timing is not None else None
            out["baseline"] = row(b, base_us)
        default = dict(template.default_config())
        full = {label: Config({**default, **c}) for label, c in configs.items()}
        results = list(runner.measure([Candidate(c, SHAPE, DTYPE) for c in full.values()]))
        for label, config in full.items():
            match = next((r for r in results if dict(r.config) == dict(config)), None)
            out[label] = row(match, base_us) if match is not None else \
                {"config": dict(config), "status": "missing", "median_us": None}
        out["device"] = runner.device.name
        out["timer"] = runner.timer_note
    return out, base_us


def main() -> int:
    out_dir = Path(os.environ.get("OUT", "."))
    plain = load_kernel_folder(FOLDER)
    lift = offline_template(plain).template
    doc: dict[str, Any] = {"kernel": "conv1d_mix7", "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.param_names)}
    lifted, base_us = timed(plain, lift, LIFT, base=True)
    doc["lift"] = lifted
    if VOTE in lift.source:
        per_lane = dataclasses.replace(lift, source=lift.source.replace(
            VOTE, "  if (wb_full) {\n"))
        doc["lift_per_lane"], _ = timed(plain, per_lane, {
            "expert_like": LIFT["expert_like"], "pick_1504": LIFT["pick_1504"]}, base=False)
    expert = load_kernel_folder(FOLDER / "expert")
    doc["expert"], _ = timed(expert, expert.template, {"pick": EXPERT_PICK}, base=False)
    for section in ("lift", "lift_per_lane", "expert"):
        for r in doc.get(section, {}).values():
            if isinstance(r, dict) and r.get("median_us") and base_us:
                r["speedup"] = base_us / r["median_us"]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "conv_mix_probe.json").write_text(json.dumps(doc, indent=1))
    for section in ("lift", "lift_per_lane", "expert"):
        for label, r in doc.get(section, {}).items():
            if isinstance(r, dict) and "status" in r:
                print(f"{section:13s} {label:18s} {r['status']:7s} {r.get('median_us')} us "
                      f"x{r.get('speedup') or 0:.2f} regs {r.get('regs')}")
    return 0 if all(r.get("status") == Status.OK.value for s in ("lift", "expert")
                    for r in doc[s].values() if isinstance(r, dict) and "status" in r) else 1


if __name__ == "__main__":
    raise SystemExit(main())
