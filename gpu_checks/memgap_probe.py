"""Memory-bound kernels below their experts' % of a copy (issue 28): is the gap the lift's code
or the tune's reach? Each kernel's lift is timed at its last tune's pick and at the expert's
pick spelled in the lift's knobs, beside the expert at its pick, the kernel as written and a
copy of the bytes, in one LocalRunner run a route (the runner the stage-1 tunes use).

What the host showed before this probe (sm_90 ptxas, nvdisasm):

- row_l2norm: the lift keeps the row in registers (REG_ROW) as the expert does (REG_STEPS);
  at the expert's pick (the row of 2560 in 24 float4 steps a lane, 16 warps a block) both
  compile to 112 registers, no spills; timed here (21:13Z) the lift was 278.5 us against
  the expert's 222.3 us (copy 216.9). The SASS told why: the lift's fill stepped with
  ``if (wb_at >= cols) break;``, so each LDG.128 waited behind the previous step's four
  FFMAs and a branch (one load in flight a warp), where the expert's predicated steps ran 6
  loads ahead; the fill now loads all its steps first (20 LDG.128 before the first FFMA).
  The lift's loads are still not read-only (x is not __restrict__).
- warp_row: REG_ROW 4096 (a row of 4096 floats in 32 float4 steps a lane: 145 registers,
  no spills) is in the space but 39 of its 867 configs; the tune picked REG_ROW 0 (67 %).
- rmsnorm_f16w: the write pass (y = x * inv * w) now takes VEC behind the run-time alias
  test (it was refused: y may alias x and w); the last tune's pick (512 threads, VEC 4,
  4 items) had vector loads in the first pass only (90 %, the expert 99 %).
- box27_smooth: a Z_QUEUE knob (the planes a thread's walk shares kept in registers, 9 new
  loads an output where the lift read 27) was timed here on the H100 (2026-11-27 21:13Z) and
  removed: 490.6 us at the tune's pick against 266.5 us without it, 1.8-2.0x slower at every
  named config (56-57 registers against 32); the expert keeps plane sums instead (65 % of a
  copy, the lift's pick 54 %).
- wave2d_o4: the expert's pick (128 x 1 threads, 4 rows a thread from global memory) is in
  the lift's space (OUT_Y 4, USE_SMEM 0): 28 loads for 4 outputs against the expert's 40
  read-only ones; 3868 configs against the expert's 128.
- bilateral5 (compute-bound, set 9): the lift at the expert's pick (32 x 4, 8 rows a thread,
  __expf) compiles to 56 registers, no spills, 2664 SASS instructions for 8 pixels; the
  expert 2696 (48 registers, global reads) and 2560 (32, its shared tile), with the same
  808 FMUL, 444 FFMA, 402 FADD, 210 MUFU. Its expf pick (FAST_MATH 0) tells how much of
  the expert's 1.59x is the hardware exponential (an approximation the gate accepts).
- gemv_q4_rows (set 9): a word's eight activations were eight 4-byte loads a lane (the lanes
  32 bytes apart, each load touching all eight lines of the warp's span), the expert's two
  float4; RUN_VEC 4 loads them as two float4 before the inner loop (at the expert's pick
  4 LDG.128 + 4 LDG for two words, 32 registers, was 20 LDG). RUN_VEC 1 is the old code's
  loads (the tune's pick: 72 LDG; RUN_VEC 4: 16 LDG.128 + 8).

    python3 gpu_checks/memgap_probe.py row_l2norm box27_smooth rmsnorm_f16w warp_row wave2d_o4
    python3 gpu_checks/memgap_probe.py gemv_q4_rows
    # writes $OUT/memgap_probe_<kernel>.json each; --dry checks the configs on the host
"""

from __future__ import annotations

import sys
from typing import Any

from probe_common import ROOT, Named, dry, dry_run, finish, lift_and_expert, timed

SHAPE, DTYPE = "large", "fp32"
BENCH = ROOT / "benchmarks"

#: kernel -> (its folder, the lift's named configs, the expert's pick)
KERNELS: dict[str, tuple[str, Named, Named]] = {
    "row_l2norm": ("corpus_compute_unseen3", {
        "tune_pick": {"ROWS_PER_BLOCK": 16, "LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 1,
                      "REG_ROW": 0, "MIN_BLOCKS_PER_SM": 1},
        "expert_pick": {"ROWS_PER_BLOCK": 16, "LANES": 32, "VEC": 4, "REG_ROW": 3072},
        "kept_8_warps": {"ROWS_PER_BLOCK": 8, "LANES": 32, "VEC": 4, "REG_ROW": 3072},
        "kept_4_warps": {"ROWS_PER_BLOCK": 4, "LANES": 32, "VEC": 4, "REG_ROW": 3072},
        "kept_16_lanes": {"ROWS_PER_BLOCK": 8, "LANES": 16, "VEC": 4, "REG_ROW": 3072},
    }, {"pick": {"LANES": 32, "REG_STEPS": 24, "VEC": 4, "WARPS_PER_BLOCK": 16}}),
    "gemv_q4_rows": ("corpus_compute_unseen9", {
        "tune_pick": {"WARPS_PER_BLOCK": 4, "LANES": 4, "VEC": 2, "ITEMS_PER_THREAD": 4,
                      "RUN_VEC": 1, "MIN_BLOCKS_PER_SM": 4},
        "tune_pick_run4": {"WARPS_PER_BLOCK": 4, "LANES": 4, "VEC": 2, "ITEMS_PER_THREAD": 4,
                           "RUN_VEC": 4, "MIN_BLOCKS_PER_SM": 4},
        "expert_pick": {"WARPS_PER_BLOCK": 1, "LANES": 32, "VEC": 1, "ITEMS_PER_THREAD": 2,
                        "RUN_VEC": 1},
        "expert_pick_run4": {"WARPS_PER_BLOCK": 1, "LANES": 32, "VEC": 1,
                             "ITEMS_PER_THREAD": 2, "RUN_VEC": 4},
        "expert_hand_run4": {"WARPS_PER_BLOCK": 4, "LANES": 8, "VEC": 4, "ITEMS_PER_THREAD": 2,
                             "RUN_VEC": 4},
    }, {"pick": {"LANES": 32, "ROWS": 1, "UNROLL": 2, "VEC": 1}}),
    "warp_row": ("corpus_compute", {
        "tune_pick": {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 1,
                      "REG_ROW": 0, "MIN_BLOCKS_PER_SM": 2},
        "kept_2_warps": {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 4, "REG_ROW": 4096},
        "kept_4_warps": {"WARPS_PER_BLOCK": 4, "LANES": 32, "VEC": 4, "REG_ROW": 4096},
        "kept_8_warps": {"WARPS_PER_BLOCK": 8, "LANES": 32, "VEC": 4, "REG_ROW": 4096},
    }, {"pick": {"LANES": 32, "VEC": 8, "WARPS_PER_BLOCK": 1}}),
    "rmsnorm_f16w": ("corpus_compute_unseen5", {
        "tune_pick": {"BLOCK_THREADS": 512, "VEC": 4, "ITEMS_PER_THREAD": 4},
        "expert_pick": {"BLOCK_THREADS": 256, "VEC": 4, "ITEMS_PER_THREAD": 1},
        "vec8_256": {"BLOCK_THREADS": 256, "VEC": 8, "ITEMS_PER_THREAD": 1},
        "vec8_512_2": {"BLOCK_THREADS": 512, "VEC": 8, "ITEMS_PER_THREAD": 2},
        "vec8_1024": {"BLOCK_THREADS": 1024, "VEC": 8, "ITEMS_PER_THREAD": 1},
    }, {"pick": {"REDUCE": 1, "ROWS": 2, "THREADS": 256, "VEC": 4}}),
    "wave2d_o4": ("corpus_compute_unseen5", {
        "tune_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 1, "OUT_Y": 2, "PAD": 0,
                      "USE_SMEM": 0},
        "expert_pick": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_X": 1, "OUT_Y": 4, "PAD": 0,
                        "USE_SMEM": 0},
    }, {"pick": {"BLOCK_X": 128, "BLOCK_Y": 1, "ITEMS_Y": 4, "USE_SMEM": 0}}),
    "box27_smooth": ("corpus_compute_unseen6", {
        "tune_pick": {"BLOCK_THREADS": 128, "BLOCK_Y": 2, "Z_ITEMS": 16},
        "plain_64x8_32": {"BLOCK_THREADS": 64, "BLOCK_Y": 8, "Z_ITEMS": 32},
    }, {"pick": {"BLOCK_X": 64, "BLOCK_Y": 8, "Z_ITEMS": 32, "USE_SMEM": 0}}),
    # compute-bound: the lift (conv_centre's OUT_Y, FAST_MATH) at the expert's pick, with and
    # without __expf; the expert with and without its __expf and its shared tile
    "bilateral5": ("corpus_compute_unseen9", {
        "expert_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_Y": 8, "FAST_MATH": 1},
        "expert_pick_expf": {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_Y": 8, "FAST_MATH": 0},
        "rows_4_of_32x8": {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_Y": 4, "FAST_MATH": 1},
        "fast_only": {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_Y": 1, "FAST_MATH": 1},
    }, {"pick": {"BX": 32, "BY": 4, "ITEMS_Y": 8, "USE_SMEM": 1, "FAST_EXP": 1},
        "pick_expf": {"BX": 32, "BY": 4, "ITEMS_Y": 8, "USE_SMEM": 1, "FAST_EXP": 0},
        "pick_global": {"BX": 32, "BY": 4, "ITEMS_Y": 8, "USE_SMEM": 0, "FAST_EXP": 1}}),
    # compute-bound: the lift with the left window kept across disparities, 8 pixels a row
    # and a tile per image (conv_fold_keep, conv_fold_tiles) at the expert's pick, the last
    # tune's pick (its MIN 2 is MIN 1's twin at 64 threads) with and without the tiles, and
    # two 2-D pickings of 8 and 16 pixels a thread; the expert with and without its tiles
    "stereo_sad64": ("corpus_compute_unseen9", {
        "expert_pick": {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1, "USE_SMEM": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_global": {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 8, "OUT_Y": 1,
                               "USE_SMEM": 0, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4, "USE_SMEM": 0,
                      "MIN_BLOCKS_PER_SM": 1},
        "tune_pick_tiles": {"BLOCK_X": 32, "BLOCK_Y": 2, "OUT_X": 2, "OUT_Y": 4,
                            "USE_SMEM": 1, "MIN_BLOCKS_PER_SM": 1},
        "tiles_4x2_16x8": {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 4, "OUT_Y": 2, "USE_SMEM": 1,
                           "MIN_BLOCKS_PER_SM": 0},
        "tiles_8x2_16x4": {"BLOCK_X": 16, "BLOCK_Y": 4, "OUT_X": 8, "OUT_Y": 2, "USE_SMEM": 1,
                           "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 16, "BY": 8, "ITEMS_X": 8, "USE_SMEM": 1},
        "pick_global": {"BX": 16, "BY": 8, "ITEMS_X": 8, "USE_SMEM": 0}}),
}


def probe(kernel: str, host_only: bool) -> int:
    """One kernel's document (or, ``host_only``, its configs' places in the spaces)."""
    folder, lift_named, expert_named = KERNELS[kernel]
    lift, expert = lift_and_expert(BENCH / folder / kernel, SHAPE, DTYPE)
    if host_only:
        return dry_run({"lift": (lift, lift_named), "expert": (expert, expert_named)})
    doc: dict[str, Any] = {"kernel": kernel, "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.template.param_names)}
    doc["lift"], base_us = timed(lift, lift_named, base=True, copy=True)
    doc["expert"], _ = timed(expert, expert_named, base=False)
    print(kernel, "copy", doc["lift"].get("copy_us"), "us")
    return finish(doc, {"lift": doc["lift"], "expert": doc["expert"]}, base_us,
                  f"memgap_probe_{kernel}.json")


def main() -> int:
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(KERNELS)
    unknown = sorted(set(names) - set(KERNELS))
    if unknown:
        print(f"unknown kernels {unknown}; known: {sorted(KERNELS)}")
        return 2
    return max(probe(name, dry(sys.argv)) for name in names)


if __name__ == "__main__":
    raise SystemExit(main())
