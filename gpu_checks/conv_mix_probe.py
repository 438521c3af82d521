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
import sys
from typing import Any

from probe_common import ROOT, dry, dry_run, finish, lift_and_expert, timed

from workbench.templater.rewrite import warp_all

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
#: The lift's warp vote (the lines rewrite.warp_all writes before ``if (wb_full)``).
VOTE = warp_all("wb_full")


def main() -> int:
    lift, expert = lift_and_expert(FOLDER, SHAPE, DTYPE)
    if dry(sys.argv):
        return dry_run({"lift": (lift, LIFT), "expert": (expert, {"pick": EXPERT_PICK})})
    doc: dict[str, Any] = {"kernel": "conv1d_mix7", "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.template.param_names)}
    doc["lift"], base_us = timed(lift, LIFT, base=True)
    if VOTE in lift.template.source:
        per_lane = dataclasses.replace(lift.template,
                                       source=lift.template.source.replace(VOTE, ""))
        doc["lift_per_lane"], _ = timed(dataclasses.replace(lift, template=per_lane), {
            "expert_like": LIFT["expert_like"], "pick_1504": LIFT["pick_1504"]}, base=False)
    doc["expert"], _ = timed(expert, {"pick": EXPERT_PICK}, base=False)
    groups: dict[str, dict[str, Any]] = {
        s: doc[s] for s in ("lift", "lift_per_lane", "expert") if s in doc}
    return finish(doc, groups, base_us, "conv_mix_probe.json")


if __name__ == "__main__":
    raise SystemExit(main())
