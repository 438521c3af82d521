"""star13_o2's lift with the z-march (workbench/templater/method_calls.py, session 29: Z_SPLIT
with the column's five planes in a register queue, reached once ``g.index(..)`` reads as its
expression) at the expert's pick (64 x 2 threads, 8 z chunks, its queue) and its neighbours,
beside the expert at its pick and the old lift's tune pick (64 x 2, no z-march: 149.0 us,
H200 2026-11-28, the expert 125.3 us); not yet run on a GPU.

    python3 gpu_checks/star13_zmarch_probe.py   # writes $OUT/star13.json
"""
from __future__ import annotations

import sys

from probe_common import ROOT, finish, lift_and_expert, timed

lift, expert = lift_and_expert(ROOT / "benchmarks/corpus_compute_unseen17/star13_o2", "large",
                               "fp32")
LIFT = {"pick_64x2_8": {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_SPLIT": 8},
        "pick_64x1_8": {"BLOCK_X": 64, "BLOCK_Y": 1, "Z_SPLIT": 8},
        "pick_32x4_8": {"BLOCK_X": 32, "BLOCK_Y": 4, "Z_SPLIT": 8},
        "pick_64x2_16": {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_SPLIT": 16},
        "pick_64x2_1": {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_SPLIT": 1},
        "old_pick_64x2": {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_SPLIT": 1, "MIN_BLOCKS_PER_SM": 1}}
g_lift, base = timed(lift, LIFT, base=True, copy=True)
g_exp, _ = timed(expert, {"pick": {"BX": 64, "BY": 2, "QUEUE": 1, "ZSPLIT": 8}}, base=False)
sys.exit(finish({"lift": g_lift, "expert": g_exp}, {"lift": g_lift, "expert": g_exp}, base,
                "star13.json"))
