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

import sys
from typing import Any

from probe_common import ROOT, dry, dry_run, finish, lift_and_expert, timed

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


def main() -> int:
    lift, expert = lift_and_expert(FOLDER, SHAPE, DTYPE)
    if dry(sys.argv):
        return dry_run({"lift": (lift, LIFT), "expert": (expert, {"pick": EXPERT_PICK})})
    doc: dict[str, Any] = {"kernel": "rbf_gram", "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.template.param_names)}
    doc["lift"], base_us = timed(lift, LIFT, base=True)
    doc["expert"], _ = timed(expert, {"pick": EXPERT_PICK}, base=False)
    return finish(doc, {"lift": doc["lift"], "expert": doc["expert"]}, base_us,
                  "rbf_inline_probe.json")


if __name__ == "__main__":
    raise SystemExit(main())
