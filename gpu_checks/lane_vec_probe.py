"""dwconv3_nhwc (benchmarks/corpus_compute_unseen6, spent) at the 'large' shape: the offline
templater's lift with LANE_VEC (workbench/templater/lane_vec.py) at a handful of configs
against the expert template at its tune's pick, timed by the runner the stage-1 benchmark's
tunes use (LocalRunner.measure), the kernel as written and a copy of the bytes in the same
run.

Settles what a lane's 2 or 4 consecutive channels (one 8- or 16-byte access) buy at the
15:06Z pick of the lift before it (CONST_VIA 1, 2 items, LANE_REGS 1, 4 outer threads,
OUT_Y 4: 650 us against the expert's 356 us, the copy 352 us) and with the register window
over 4 x 4 outputs, whose slots LANE_VEC now counts against the register file.

``inner_*`` (added after the 15:49Z run): the window's walk now has an interior copy
(workbench/templater/const_inner.py): a thread whose bounds tests hold at every item, row and
tap (a warp's vote) runs it without them, its load-once flags constants (sm_90 SASS at
LANE_VEC 2, 4 x 4: 36 loads, as the expert's window, instead of 144 guarded ones). The
configs: the expert's pick in the lift's knobs (2 channels, 8 pixels' lanes, 4 x 4 outputs,
the taps in shared memory) with the taps read per use and held in registers, the taps from
constant memory, 4 channels at 4 x 4 and 2 x 2, 1 channel at 4 x 4.

    python3 gpu_checks/lane_vec_probe.py      # writes $OUT/lane_vec_probe.json
"""

from __future__ import annotations

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

FOLDER = ROOT / "benchmarks" / "corpus_compute_unseen6" / "dwconv3_nhwc"
SHAPE, DTYPE = "large", "fp32"
_PICK = {"CONST_VIA": 1, "ITEMS_PER_THREAD": 2, "LANE_REGS": 1, "LANE_WINDOW": 0,
         "OUTER_THREADS": 4, "OUT_Y": 4}
_WINDOW = {"CONST_VIA": 1, "ITEMS_PER_THREAD": 4, "LANE_REGS": 0, "LANE_WINDOW": 1,
           "OUTER_THREADS": 8, "OUT_Y": 4}
#: The lift's configs: the 15:06Z pick and the 4 x 4 window, each at 1, 2 and 4 channels.
LIFT = {**{f"pick_vec{v}": {**_PICK, "LANE_VEC": v} for v in (1, 2, 4)},
        **{f"window_vec{v}": {**_WINDOW, "LANE_VEC": v} for v in (1, 2, 4)},
        "window_vec2_regs": {**_WINDOW, "LANE_VEC": 2, "LANE_REGS": 1},
        "window_vec4_2x2": {**_WINDOW, "LANE_VEC": 4, "ITEMS_PER_THREAD": 2, "OUT_Y": 2,
                            "OUTER_THREADS": 16}}
_INNER = {"CONST_VIA": 1, "ITEMS_PER_THREAD": 4, "LANE_REGS": 0, "LANE_WINDOW": 1,
          "OUTER_THREADS": 8, "OUT_Y": 4, "LANE_VEC": 2}
LIFT.update({
    "inner_vec2_4x4": _INNER,
    "inner_vec2_4x4_regs": {**_INNER, "LANE_REGS": 1},
    "inner_vec2_4x4_const": {**_INNER, "CONST_VIA": 0},
    "inner_vec2_4x4_16px": {**_INNER, "OUTER_THREADS": 16},
    "inner_vec4_4x4": {**_INNER, "LANE_VEC": 4},
    "inner_vec4_2x2": {**_INNER, "LANE_VEC": 4, "ITEMS_PER_THREAD": 2, "OUT_Y": 2,
                       "OUTER_THREADS": 16},
    "inner_vec1_4x4": {**_INNER, "LANE_VEC": 1, "OUTER_THREADS": 4},
})
EXPERT_PICK = {"VEC": 2, "PIX": 8, "ITEMS_X": 4, "ITEMS_Y": 4, "USE_SMEM": 0, "TAPS": 1}


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
            copy = runner.copy_timing(SHAPE, DTYPE)
            out["copy_us"] = copy.timing.median_us
        default = dict(template.default_config())
        full = {label: Config({**default, **c}) for label, c in configs.items()}
        space = template.space(folder.env(SHAPE, DTYPE))
        out["rejected"] = {label: str(space.rejection(dict(c))) for label, c in full.items()
                           if space.rejection(dict(c)) is not None}
        kept = {label: c for label, c in full.items() if label not in out["rejected"]}
        results = {r.config: r for r in runner.measure(
            [Candidate(c, SHAPE, DTYPE) for c in kept.values()])}
        for label, config in kept.items():
            out[label] = row(results[config], base_us)
        out["device"] = runner.device.name
        out["timer"] = runner.timer_note
    return out, base_us


def main() -> int:
    out_dir = Path(os.environ.get("OUT", "."))
    plain = load_kernel_folder(FOLDER)
    lift = offline_template(plain).template
    doc: dict[str, Any] = {"kernel": "dwconv3_nhwc", "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.param_names)}
    doc["lift"], base_us = timed(plain, lift, LIFT, base=True)
    expert = load_kernel_folder(FOLDER / "expert")
    doc["expert"], _ = timed(expert, expert.template, {"pick": EXPERT_PICK}, base=False)
    for r in doc["expert"].values():
        if isinstance(r, dict) and r.get("median_us") and base_us:
            r["speedup"] = base_us / r["median_us"]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "lane_vec_probe.json").write_text(json.dumps(doc, indent=1, default=str))
    for section in ("lift", "expert"):
        for label, r in doc[section].items():
            if isinstance(r, dict) and "status" in r:
                print(f"{section:7s} {label:18s} {r['status']:6s} {r['median_us']} us "
                      f"x{r['speedup'] or 0:.2f} regs {r['regs']}")
    print("copy", doc["lift"].get("copy_us"), "rejected", doc["lift"]["rejected"])
    return 0 if all(r.get("status") == Status.OK.value for s in ("lift", "expert")
                    for r in doc[s].values() if isinstance(r, dict) and "status" in r) else 1


if __name__ == "__main__":
    raise SystemExit(main())
