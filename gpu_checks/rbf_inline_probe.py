"""rbf_gram (benchmarks/corpus_compute_unseen7, spent) at the 'large' shape: the offline
templater's lift, now that the kernel's body (a ``template <int TILE> __device__`` function)
is inlined before the analysis (workbench/templater/inline_calls.py), at a handful of
register-tile configs against the expert template at its 15:02Z tune's pick (BM = BN = 128,
BK = 16, TM = TN = 8, PAD = 1: 460.6 us, 5.63x), and the kernel as written in the same run,
timed by the runner the stage-1 benchmark's tunes use (LocalRunner.measure).

Settles whether the lifted space holds a config near the expert's (the lift's register tile
pads its k-major tiles by one word always, and takes 16-byte loads with VEC = 4) apart from
what a guided tune of 40 evaluations happens to reach.

    python3 gpu_checks/rbf_inline_probe.py      # writes $OUT/rbf_inline_probe.json
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder  # noqa: E402
from workbench.core.records import Candidate, Config, Status, TrialResult  # noqa: E402
from workbench.core.template import KernelTemplate  # noqa: E402
from workbench.engine.runner import LocalRunner  # noqa: E402
from workbench.templater import offline_template  # noqa: E402

FOLDER = ROOT / "benchmarks" / "corpus_compute_unseen7" / "rbf_gram"
SHAPE, DTYPE = "large", "fp32"
#: The lift's configs: the expert's pick (with 16-byte loads: the space asks for them with
#: a register tile over a depth of four or more), neighbours along the tile's depth and shape.
LIFT = {
    "expert_like": {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "VEC": 4},
    "expert_like_bk8": {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "VEC": 4},
    "expert_like_bk32": {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "VEC": 4},
    "64x128_t4x8": {"BM": 64, "BN": 128, "BK": 16, "TM": 4, "TN": 8, "VEC": 4},
    "128x64_t8x4": {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4, "VEC": 4},
    "64x64_t4x4": {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "VEC": 4},
    "32x32_t2x2": {"BM": 32, "BN": 32, "BK": 16, "TM": 2, "TN": 2, "VEC": 4},
}
EXPERT_PICK = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PAD": 1}


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


def timed(folder: KernelFolder, template: KernelTemplate, configs: dict[str, dict[str, int]],
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
        space = template.space(folder.env(SHAPE, DTYPE))
        outside = {label: space.rejection(c) for label, c in full.items()}
        for label, why in outside.items():
            if why is not None:
                out[label] = {"config": dict(full[label]), "status": "outside the space",
                              "reason": why}
        inside = {k: v for k, v in full.items() if outside[k] is None}
        results = {r.config: r for r in runner.measure(
            [Candidate(c, SHAPE, DTYPE) for c in inside.values()])}
        for label, config in inside.items():
            out[label] = row(results[config], base_us)
        out["device"] = runner.device.name
        out["timer"] = runner.timer_note
    return out, base_us


def main() -> int:
    out_dir = Path(os.environ.get("OUT", "."))
    plain = load_kernel_folder(FOLDER)
    lift = offline_template(plain).template
    doc: dict[str, Any] = {"kernel": "rbf_gram", "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.param_names)}
    doc["lift"], base_us = timed(plain, lift, LIFT, base=True)
    expert = load_kernel_folder(FOLDER / "expert")
    doc["expert"], _ = timed(expert, expert.template, {"pick": EXPERT_PICK}, base=False)
    for section in ("lift", "expert"):
        for r in doc[section].values():
            if isinstance(r, dict) and r.get("median_us") and base_us:
                r["speedup"] = base_us / r["median_us"]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "rbf_inline_probe.json").write_text(json.dumps(doc, indent=1))
    for section in ("lift", "expert"):
        for label, r in doc[section].items():
            if isinstance(r, dict) and "status" in r:
                print(f"{section:7s} {label:18s} {r['status']:6s} {r.get('median_us')} us "
                      f"x{r.get('speedup') or 0:.2f} regs {r.get('regs')}")
    return 0 if all(r.get("status") == Status.OK.value for s in ("lift", "expert")
                    for r in doc[s].values() if isinstance(r, dict) and "status" in r) else 1


if __name__ == "__main__":
    raise SystemExit(main())
