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

import sys
from typing import Any

from probe_common import OUTSIDE, ROOT, dry, dry_run, finish, lift_and_expert, rows, timed

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


def main() -> int:
    lift, expert = lift_and_expert(FOLDER, SHAPE, DTYPE)
    if dry(sys.argv):
        return dry_run({"lift": (lift, LIFT), "expert": (expert, {"pick": EXPERT_PICK})})
    doc: dict[str, Any] = {"kernel": "dwconv3_nhwc", "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.template.param_names)}
    doc["lift"], base_us = timed(lift, LIFT, base=True, copy=True)
    doc["expert"], _ = timed(expert, {"pick": EXPERT_PICK}, base=False)
    groups = {"lift": doc["lift"], "expert": doc["expert"]}
    for group in groups.values():  # the listing the 15:49Z and 16:34Z documents carry
        group["rejected"] = {label: r["reason"] for label, r in rows(group).items()
                             if r["status"] == OUTSIDE}
    print("copy", doc["lift"].get("copy_us"), "rejected", doc["lift"]["rejected"])
    return finish(doc, groups, base_us, "lane_vec_probe.json", default=str)


if __name__ == "__main__":
    raise SystemExit(main())
