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
  copy, the lift's pick 54 %). Z_SUMS (stencil_zsums, 2026-11-28) carries the plane sums:
  each plane read once, three outputs' sums in registers; at the expert's block and planes
  (64 x 8, 32 planes) sm_90 32 registers, no spills, 10 global loads in the PTX (9 and the
  boundary copy) against 28 at Z_SUMS 0. Groups sums_64x8_32 and sums_tune_pick time it.
- wave2d_o4: the expert's pick (128 x 1 threads, 4 rows a thread from global memory) is in
  the lift's space (OUT_Y 4, USE_SMEM 0): 28 loads for 4 outputs, 24 of them issued before
  the first FP op (40 registers), against the expert's 40 (9 before, 28 registers); the
  lift's are LDG.E, the expert's LDG.E.CONSTANT (its inputs are const __restrict__). Group
  lift_ro times the lift with its const inputs __restrict__ (28 LDG.E.CONSTANT, the same
  536 instructions otherwise): the load path alone. 3032 configs at the large shape
  against the expert's 128.
- gauss5: at the expert's block and rows (64 x 8 threads, 8 rows a thread) both fill the
  68 x 68 tile with the same loop (unrolled by 4, 4 loads in flight, 18496 bytes); the lift
  reads its 8 rows from a 12 x 5 register window (60 LDS, 40 registers), the expert 25 LDS
  an output (200, 32 registers; 185 with its row sums first, SEPARABLE 1, another order of
  the sum); the lift's loads LDG.E, the expert's LDG.E.CONSTANT (lift_ro as for wave2d_o4).
  1592 configs against the expert's 157. SEPARABLE (apron_separable, 2026-11-28) sums each
  window row once for the thread's rows (12 row sums, then 5 a row: PTX 60 fma + 40 add
  against 168 + 32; 32 registers against 40, no spills): config expert_pick_sep; 2740
  configs.
- dwconv3_nhwc: at the expert's pick (8 pixels x 16 lanes of 2 channels, 4 x 4 pixels a
  thread, taps copied to shared memory, __launch_bounds__(128, 1)) the lift's walk without
  checks (taken where the whole warp is inside) has the expert's 36 LDG.E.64.CONSTANT and
  288 FFMA, no branch, 33 loads issued before the first FFMA at MIN_BLOCKS_PER_SM 1 (115
  registers; the expert 35 of 36, 126) but 21 at MIN 0 (96 registers: ptxas's own register
  target); the last tune's pick (MIN 0, 2 x 2 rows of 8 pixels) 19 of 40. The expert
  without its minimum (__launch_bounds__(128)) drops to 72 registers and 18 of 36 loads
  first: the load order is the register target, which the lift spells MIN_BLOCKS_PER_SM 1
  (group expert_nomin times it). The lift's walk with checks (warps at the image's edge)
  makes the kernel 4432 instructions against the expert's 1040 (predicated loads, one walk).
  In that checked walk each load's sum read it before the next check (one load in flight
  a thread at the image's edge: the grid's first and last block rows and columns, the last
  row scheduled last); since 9dbec2e a loads-first pass issues them together (sm_90 at the
  pick: 149 registers at MIN 1, 124 with LANE_REGS 0, 142 at MIN 0, no spills); group
  lift_nofirst times the pick without it (the lift as before, the same run).
  4278 configs against the expert's 394.
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
- nbody_accel (compute-bound, set 10): the staged walk's JSPLIT and ITEMS (the pair term, a
  statement lambda, written into its call). At the expert's pick (128 threads, a body a
  thread, four rows a tile) sm_90 ptxas -O3 gives the lift 32 registers and 9728 bytes of
  shared memory, no spills, as the expert's pick (UNROLL 16 or 8); at 4 bodies a thread
  and 8 rows of 64, 63 registers. Its expert_pick_jsplit1 is the first contact's form.

    python3 gpu_checks/memgap_probe.py row_l2norm box27_smooth rmsnorm_f16w warp_row wave2d_o4
    python3 gpu_checks/memgap_probe.py gemv_q4_rows
    python3 gpu_checks/memgap_probe.py dwconv3_nhwc wave2d_o4 gauss5
    python3 gpu_checks/memgap_probe.py mandel_f64
    python3 gpu_checks/memgap_probe.py nbody_accel
    python3 gpu_checks/memgap_probe.py syrk_lower
    python3 gpu_checks/memgap_probe.py jacobi9_torus
    python3 gpu_checks/memgap_probe.py sym3_jacobi
    python3 gpu_checks/memgap_probe.py expm4_taylor
    python3 gpu_checks/memgap_probe.py cheb128_f64
    python3 gpu_checks/memgap_probe.py bessel_i0_series
    python3 gpu_checks/memgap_probe.py median3x3_clamp
    python3 gpu_checks/memgap_probe.py resize_bilinear_f16
    python3 gpu_checks/memgap_probe.py dft64_batched
    python3 gpu_checks/memgap_probe.py nearest_centroid_d2
    python3 gpu_checks/memgap_probe.py redblack_red_sweep
    python3 gpu_checks/memgap_probe.py collatz_steps
    python3 gpu_checks/memgap_probe.py lnbwd_colpartials
    python3 gpu_checks/memgap_probe.py erf_series_f64
    python3 gpu_checks/memgap_probe.py cbrt_newton_f64
    python3 gpu_checks/memgap_probe.py corr7x7_bank4
    python3 gpu_checks/memgap_probe.py rowl1_scale_warp
    python3 gpu_checks/memgap_probe.py welford_rows_warp
    python3 gpu_checks/memgap_probe.py dct8x8_blocks
    python3 gpu_checks/memgap_probe.py besselj0_miller_f64
    python3 gpu_checks/memgap_probe.py coulomb_pot_tiles
    python3 gpu_checks/memgap_probe.py gemm_cm_bt_rowscale
    python3 gpu_checks/memgap_probe.py gram_ata_ridge
    python3 gpu_checks/memgap_probe.py conv3x3_s2_sat
    python3 gpu_checks/memgap_probe.py lorenz_rk2_f64
    python3 gpu_checks/memgap_probe.py row_firsthits_warp
    python3 gpu_checks/memgap_probe.py crspline_rotmean
    python3 gpu_checks/memgap_probe.py upconv4x4_s2
    python3 gpu_checks/memgap_probe.py pearson_cm_tiled
    python3 gpu_checks/memgap_probe.py gmm_loglik_k16
    python3 gpu_checks/memgap_probe.py cummax_rows_cg
    python3 gpu_checks/memgap_probe.py sobel_magdir_tile
    # writes $OUT/memgap_probe_<kernel>.json each; --dry checks the configs on the host
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from typing import Any

from probe_common import ROOT, Named, Probe, dry, dry_run, finish, lift_and_expert, timed

SHAPE, DTYPE = "large", "fp32"
BENCH = ROOT / "benchmarks"

WAVE2D_LIFT: Named = {
    "tune_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 1, "OUT_Y": 2, "PAD": 0,
                  "USE_SMEM": 0},
    "expert_pick": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_X": 1, "OUT_Y": 4, "PAD": 0,
                    "USE_SMEM": 0},
    "expert_pick_min1": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_X": 1, "OUT_Y": 4, "PAD": 0,
                         "USE_SMEM": 0, "MIN_BLOCKS_PER_SM": 1},
    "expert_pick_tile": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_X": 1, "OUT_Y": 4, "PAD": 0,
                         "USE_SMEM": 1},
}
GAUSS5_LIFT: Named = {
    "tune_pick": {"BLOCK_X": 32, "BLOCK_Y": 16, "OUT_X": 2, "OUT_Y": 4, "PAD": 1,
                  "MIN_BLOCKS_PER_SM": 2},
    "expert_pick": {"BLOCK_X": 64, "BLOCK_Y": 8, "OUT_X": 1, "OUT_Y": 8, "PAD": 0,
                    "MIN_BLOCKS_PER_SM": 0, "SEPARABLE": 0},
    # the window rows' horizontal sums shared by the thread's 8 rows (the expert's order)
    "expert_pick_sep": {"BLOCK_X": 64, "BLOCK_Y": 8, "OUT_X": 1, "OUT_Y": 8, "PAD": 0,
                        "MIN_BLOCKS_PER_SM": 0, "SEPARABLE": 1},
}
DWCONV3_EXPERT_PICK = {"OUTER_THREADS": 8, "LANE_VEC": 2, "ITEMS_PER_THREAD": 4, "OUT_Y": 4,
                       "LANE_WINDOW": 1, "CONST_VIA": 1, "LANE_REGS": 1,
                       "MIN_BLOCKS_PER_SM": 1}

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
        # the tune's pick had MIN_BLOCKS_PER_SM 2: at 64 threads its register share is still
        # ptxas's 255 a thread, MIN 1's twin, which e372591 left out of the space
        "tune_pick": {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 1,
                      "REG_ROW": 0, "MIN_BLOCKS_PER_SM": 1},
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
    "wave2d_o4": ("corpus_compute_unseen5", WAVE2D_LIFT,
                  {"pick": {"BLOCK_X": 128, "BLOCK_Y": 1, "ITEMS_Y": 4, "USE_SMEM": 0}}),
    # the lift's row window (OUT_Y consecutive rows from registers) at the expert's block and
    # rows; the expert at its pick (row sums first) and summing the 25 terms as written
    "gauss5": ("corpus_compute_unseen2", GAUSS5_LIFT,
               {"pick": {"TILE_W": 64, "TILE_H": 8, "ROWS": 8, "SEPARABLE": 1},
                "pick_direct": {"TILE_W": 64, "TILE_H": 8, "ROWS": 8, "SEPARABLE": 0}}),
    # the register window (4 x 4 pixels, two channels a lane) at the expert's pick with its
    # __launch_bounds__ minimum (MIN 1) and without it (MIN 0, ptxas's own register target),
    # the taps read from the shared copy in every tap (LANE_REGS 0, as the expert does) and
    # from constant memory (CONST_VIA 0); the expert at its pick
    "dwconv3_nhwc": ("corpus_compute_unseen6", {
        "tune_pick": {"OUTER_THREADS": 2, "LANE_VEC": 2, "ITEMS_PER_THREAD": 8, "OUT_Y": 2,
                      "LANE_WINDOW": 1, "CONST_VIA": 0, "LANE_REGS": 1,
                      "MIN_BLOCKS_PER_SM": 0},
        "expert_pick": DWCONV3_EXPERT_PICK,
        "expert_pick_min0": {**DWCONV3_EXPERT_PICK, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_taps_shared": {**DWCONV3_EXPERT_PICK, "LANE_REGS": 0},
        "expert_pick_taps_const": {**DWCONV3_EXPERT_PICK, "CONST_VIA": 0},
    }, {"pick": {"PIX": 8, "VEC": 2, "ITEMS_X": 4, "ITEMS_Y": 4, "TAPS": 1, "USE_SMEM": 0}}),
    "box27_smooth": ("corpus_compute_unseen6", {
        "tune_pick": {"BLOCK_THREADS": 128, "BLOCK_Y": 2, "Z_ITEMS": 16},
        "plain_64x8_32": {"BLOCK_THREADS": 64, "BLOCK_Y": 8, "Z_ITEMS": 32},
        "sums_64x8_32": {"BLOCK_THREADS": 64, "BLOCK_Y": 8, "Z_ITEMS": 32, "Z_SUMS": 1},
        "sums_tune_pick": {"BLOCK_THREADS": 128, "BLOCK_Y": 2, "Z_ITEMS": 16, "Z_SUMS": 1},
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
    # compute-bound (set 10): the lift (BLOCK_THREADS, UNROLL of the author's pragma, ITEMS
    # and JSPLIT of the staged walk, MIN_BLOCKS_PER_SM) at the expert's pick (128 threads, a
    # body a thread, four rows a tile; its unroll 16 above the lift's range: 8), with one
    # knob back (JSPLIT 1: the first contact's form; UNROLL 1), with two bodies a thread, and
    # eight rows of 32; the first contact's tune pick (no rows). The expert at its pick and
    # with one knob back to the kernel as written: JSPLIT 1, UNROLL 8 (the lift's largest)
    "nbody_accel": ("corpus_compute_unseen10", {
        "expert_pick": {"BLOCK_THREADS": 128, "UNROLL": 8, "ITEMS": 1, "JSPLIT": 4,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_jsplit1": {"BLOCK_THREADS": 128, "UNROLL": 8, "ITEMS": 1, "JSPLIT": 1,
                                "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_unroll1": {"BLOCK_THREADS": 128, "UNROLL": 1, "ITEMS": 1, "JSPLIT": 4,
                                "MIN_BLOCKS_PER_SM": 0},
        "items2_rows4": {"BLOCK_THREADS": 128, "UNROLL": 8, "ITEMS": 2, "JSPLIT": 4,
                         "MIN_BLOCKS_PER_SM": 0},
        "rows8_32": {"BLOCK_THREADS": 32, "UNROLL": 8, "ITEMS": 1, "JSPLIT": 8,
                     "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 128, "UNROLL": 8, "ITEMS": 1, "JSPLIT": 1,
                      "MIN_BLOCKS_PER_SM": 4},
    }, {"pick": {"THREADS": 128, "ITEMS": 1, "JSPLIT": 4, "UNROLL": 16},
        "pick_jsplit1": {"THREADS": 128, "ITEMS": 1, "JSPLIT": 1, "UNROLL": 16},
        "pick_unroll8": {"THREADS": 128, "ITEMS": 1, "JSPLIT": 4, "UNROLL": 8}}),
    # memory-bound (set 10): the lift's WALK_SPLIT (lanes of a warp sharing a column's rows,
    # shuffle-combined) at the expert's 32 x 8 threads, and with 2 and 4 lanes a column
    # (a warp reads 32 / WALK_SPLIT halves of a row: 2 lanes fill a 32-byte sector, 8 use a
    # quarter of it; the expert's rows of threads are whole warps); the first contact's
    # tune pick (no split); the expert at its pick and with its rows split over 8 but one
    # row loaded at a time (UNROLL 1: the lift's loop is nvcc's own unroll by 4)
    "gemvt_f16_batched": ("corpus_compute_unseen10", {
        "expert_pick": {"BLOCK_THREADS": 32, "WALK_SPLIT": 8, "ITEMS_PER_THREAD": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "split4_64": {"BLOCK_THREADS": 64, "WALK_SPLIT": 4, "ITEMS_PER_THREAD": 1,
                      "MIN_BLOCKS_PER_SM": 0},
        "split2_128": {"BLOCK_THREADS": 128, "WALK_SPLIT": 2, "ITEMS_PER_THREAD": 1,
                       "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 96, "WALK_SPLIT": 1, "ITEMS_PER_THREAD": 1,
                      "MIN_BLOCKS_PER_SM": 1},
    }, {"pick": {"TX": 32, "VEC": 2, "RSPLIT": 8, "UNROLL": 4},
        "pick_unroll1": {"TX": 32, "VEC": 2, "RSPLIT": 8, "UNROLL": 1}}),
    # compute-bound (set 10): the expert's pick is one pixel a thread on 8 x 16 threads with
    # its squares kept and the interior test (1.87x; the first contact's lift tuned to the
    # same block, 1.01x). The lift (items of a 2-D block's x stepped in one loop) at that
    # block with 1, 2 and 4 pixels a thread; the expert at its pick, with one knob back to
    # the kernel as written (INTERIOR 0: the shortcut no analysis may take; SQUARES 0), with
    # both (its block alone) and with 2 pixels a thread (its form of the lift's items)
    "mandel_f64": ("corpus_compute_unseen10", {
        "expert_pick": {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_PER_THREAD": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "items2": {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_PER_THREAD": 2, "MIN_BLOCKS_PER_SM": 0},
        "items4": {"BLOCK_X": 8, "BLOCK_Y": 16, "ITEMS_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 8, "BY": 16, "ITEMS": 1, "SQUARES": 1, "INTERIOR": 1},
        "pick_no_interior": {"BX": 8, "BY": 16, "ITEMS": 1, "SQUARES": 1, "INTERIOR": 0},
        "pick_no_squares": {"BX": 8, "BY": 16, "ITEMS": 1, "SQUARES": 0, "INTERIOR": 1},
        "block_only": {"BX": 8, "BY": 16, "ITEMS": 1, "SQUARES": 0, "INTERIOR": 0},
        "items2_only": {"BX": 8, "BY": 16, "ITEMS": 2, "SQUARES": 0, "INTERIOR": 0}}),
    # memory-bound (set 10): the first contact lifted nothing (the walk through a pointer
    # declared before an open for, the fold in a do-while); now WARPS_PER_BLOCK, LANES (2 ..
    # 32), ILP, VEC (the segment's aligned middle as float4, a scalar head and tail, as the
    # expert's VEC), LDG (the walk's *p through __ldg, as the expert reads every value). The
    # lift at the expert's pick (128 threads, 8 lanes a segment, 4 loads in flight a lane,
    # __ldg, VEC 1), with its float4 middle (VEC 4, beside the expert's pick_vec4) and with
    # one knob back (LDG 0: 178.1 us at 22:39Z; ILP 1; LANES 32, a warp a segment as
    # written); the expert at its pick and with its float4 middle
    "segment_sums": ("corpus_compute_unseen10", {
        "expert_pick": {"WARPS_PER_BLOCK": 4, "LANES": 8, "ILP": 4, "VEC": 1, "LDG": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "vec4": {"WARPS_PER_BLOCK": 4, "LANES": 8, "ILP": 4, "VEC": 4, "LDG": 1,
                 "MIN_BLOCKS_PER_SM": 0},
        "ldg0": {"WARPS_PER_BLOCK": 4, "LANES": 8, "ILP": 4, "VEC": 1, "LDG": 0,
                 "MIN_BLOCKS_PER_SM": 0},
        "ilp1": {"WARPS_PER_BLOCK": 4, "LANES": 8, "ILP": 1, "VEC": 1, "LDG": 1,
                 "MIN_BLOCKS_PER_SM": 0},
        "lanes32": {"WARPS_PER_BLOCK": 4, "LANES": 32, "ILP": 4, "VEC": 1, "LDG": 1,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 128, "LANES": 8, "UNROLL": 4, "VEC": 1},
        "pick_vec4": {"THREADS": 128, "LANES": 8, "UNROLL": 4, "VEC": 4}}),
    # memory-bound (set 11): the first contact lifted nothing (512 threads a 1024-float row,
    # the block size implied; expert 1.77x at V 4, ROWS 1, SHFL 1, VEC 4, 98 % of a copy);
    # now BLOCK_THREADS (the phases' 512 work items a block stride apart), ROWS_PER_BLOCK,
    # REG_STAGES (1024 / BLOCK_THREADS elements a thread in registers for the leading
    # stages that pair inside them), SHFL (the next stages pairing lanes of a warp through
    # __shfl_xor_sync), VEC (the row's load and store phases). The lift at the expert's pick
    # in its knobs (256 threads a row: V 4, two stages in registers, five in shuffles,
    # float4), without shuffles (SHFL 0), all through shared memory (REG_STAGES 0), 32
    # threads x 8 rows (V 32, every stage in a warp), 64 x 4 and 128 x 2 with shuffles; the
    # expert at its pick, without shuffles (SHFL 0) and with scalar loads too (its register
    # stages alone)
    "wht1024_rows": ("corpus_compute_unseen11", {
        "expert_pick": {"BLOCK_THREADS": 256, "ROWS_PER_BLOCK": 1, "REG_STAGES": 1, "SHFL": 1,
                        "VEC": 4, "MIN_BLOCKS_PER_SM": 0},
        "shfl0": {"BLOCK_THREADS": 256, "ROWS_PER_BLOCK": 1, "REG_STAGES": 1, "SHFL": 0,
                  "VEC": 4, "MIN_BLOCKS_PER_SM": 0},
        "regs0": {"BLOCK_THREADS": 256, "ROWS_PER_BLOCK": 1, "REG_STAGES": 0, "SHFL": 0,
                  "VEC": 4, "MIN_BLOCKS_PER_SM": 0},
        "t32_r8": {"BLOCK_THREADS": 32, "ROWS_PER_BLOCK": 8, "REG_STAGES": 1, "SHFL": 1,
                   "VEC": 4, "MIN_BLOCKS_PER_SM": 0},
        "t64_r4": {"BLOCK_THREADS": 64, "ROWS_PER_BLOCK": 4, "REG_STAGES": 1, "SHFL": 1,
                   "VEC": 4, "MIN_BLOCKS_PER_SM": 0},
        "t128_r2": {"BLOCK_THREADS": 128, "ROWS_PER_BLOCK": 2, "REG_STAGES": 1, "SHFL": 1,
                    "VEC": 4, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"V": 4, "ROWS": 1, "SHFL": 1, "PAD": 0, "VEC": 4},
        "pick_no_shfl": {"V": 4, "ROWS": 1, "SHFL": 0, "PAD": 0, "VEC": 4},
        "pick_no_shfl_vec": {"V": 4, "ROWS": 1, "SHFL": 0, "PAD": 0, "VEC": 1}}),
    # compute-bound (set 11): the first contact lifted nothing (a class template's static
    # tile routine, blocks above the diagonal leaving early; expert 2.04x at BT 64, BK 32,
    # TM 4, TN 2, PAD 1, SAME 1); now BM == BN, BK, TM, TN, VEC. The expert's 4 x 2 register
    # tile on a 64 tile is outside the lift's space (regtile_space: a 4 x 2 tile to 1024
    # outputs a block), so the lift at its nearest (64, 32, 4 x 4), with 16-deep slices, at
    # 4 x 2 on a 32 tile, and at 128 of 8 x 8; the expert at its pick, with one staged copy
    # per tile back to two (SAME 0: the lift stages both), and at the lift's 4 x 4
    "syrk_lower": ("corpus_compute_unseen11", {
        "expert_pick": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4},
        "bk16": {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "VEC": 4},
        "t32_4x2": {"BM": 32, "BN": 32, "BK": 32, "TM": 4, "TN": 2, "VEC": 4},
        "t128_8x8": {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "VEC": 4},
    }, {"pick": {"BT": 64, "BK": 32, "TM": 4, "TN": 2, "PAD": 1, "SAME": 1},
        "pick_same0": {"BT": 64, "BK": 32, "TM": 4, "TN": 2, "PAD": 1, "SAME": 0},
        "pick_4x4": {"BT": 64, "BK": 32, "TM": 4, "TN": 4, "PAD": 1, "SAME": 1}}),
    # compute-bound (set 11): the first contact lifted items a block apart (2.96x at 1024
    # threads x 2; expert 9.72x at THREADS 64, ITEMS 8, SMEM 1, CONTIG 1); now T_ITEMS
    # (consecutive outputs sliding a register window over the 128 taps) and USE_SMEM (the
    # block's span staged once). The lift at the expert's pick in its knobs, through the
    # cache, at 256 x 8 through the cache and 128 x 4 staged; the expert at its pick,
    # through the cache (SMEM 0) and with its outputs a block apart (CONTIG 0)
    "fir128_const": ("corpus_compute_unseen11", {
        "expert_pick": {"BLOCK_THREADS": 64, "T_ITEMS": 8, "USE_SMEM": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_cached": {"BLOCK_THREADS": 64, "T_ITEMS": 8, "USE_SMEM": 0,
                               "MIN_BLOCKS_PER_SM": 0},
        "t256_8_cached": {"BLOCK_THREADS": 256, "T_ITEMS": 8, "USE_SMEM": 0,
                          "MIN_BLOCKS_PER_SM": 0},
        "t128_4_staged": {"BLOCK_THREADS": 128, "T_ITEMS": 4, "USE_SMEM": 1,
                          "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 64, "ITEMS": 8, "SMEM": 1, "CONTIG": 1},
        "pick_cached": {"THREADS": 64, "ITEMS": 8, "SMEM": 0, "CONTIG": 1},
        "pick_interleaved": {"THREADS": 64, "ITEMS": 8, "SMEM": 1, "CONTIG": 0}}),
    # memory-bound (set 11): the first contact wrapped its 9 neighbours by modulo through an
    # index class (1.21x, 58 % of a copy; expert 1.71x, 82 %, at BX 128, BY 1, ITEMS_Y 2,
    # WRAP 1); now by compare (periodic_index) and walked by the rows family (OUT_Y: a
    # thread's consecutive rows share their neighbour rows in a register window,
    # stencil_rows_wrap keying the wrapped rows). The lift at the expert's pick in its knobs
    # (128 x 1, two rows a thread), with 4 and 8 rows and one row a thread (the window's
    # share); the expert at its pick, by modulo (WRAP 0: the division's share) and one row a
    # thread (ITEMS_Y 1: the register window's share)
    "jacobi9_torus": ("corpus_compute_unseen11", {
        "expert_pick": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_Y": 2, "OUT_X": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_y4": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_Y": 4, "OUT_X": 1,
                           "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_y8": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_Y": 8, "OUT_X": 1,
                           "MIN_BLOCKS_PER_SM": 0},
        "one_row": {"BLOCK_X": 128, "BLOCK_Y": 1, "OUT_Y": 1, "OUT_X": 1,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 128, "BY": 1, "ITEMS_Y": 2, "WRAP": 1},
        "pick_modulo": {"BX": 128, "BY": 1, "ITEMS_Y": 2, "WRAP": 0},
        "pick_one_row": {"BX": 128, "BY": 1, "ITEMS_Y": 1, "WRAP": 1}}),
    # compute-bound (set 11): the first contact ran its items one after another (1.00x at
    # 64 threads; expert 1.22x at THREADS 64, ITEMS 2, RSQRT 1, MIN_BLOCKS 1); now the items
    # interleave (a Sym3 object per item, rotate called per item in the shared sweeps) and
    # rotate's 1/sqrtf and one division are FAST_MATH and FAST_DIV. The lift at the expert's
    # pick in its knobs, with FAST_DIV too, without FAST_MATH (the items' share), at one
    # matrix a thread with FAST_MATH (rsqrtf's share), and at 4 a thread; the expert at its
    # pick, with 1 / sqrtf (RSQRT 0) and one matrix a thread (ITEMS 1)
    "sym3_jacobi": ("corpus_compute_unseen11", {
        "expert_pick": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "UNROLL": 0,
                        "FAST_MATH": 1, "FAST_DIV": 0, "MIN_BLOCKS_PER_SM": 1},
        "expert_pick_div": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "UNROLL": 0,
                            "FAST_MATH": 1, "FAST_DIV": 1, "MIN_BLOCKS_PER_SM": 1},
        "expert_pick_exact": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "UNROLL": 0,
                              "FAST_MATH": 0, "FAST_DIV": 0, "MIN_BLOCKS_PER_SM": 1},
        "one_item_rsqrt": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 1, "UNROLL": 0,
                           "FAST_MATH": 1, "FAST_DIV": 0, "MIN_BLOCKS_PER_SM": 1},
        "items4_div": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 0,
                       "FAST_MATH": 1, "FAST_DIV": 1, "MIN_BLOCKS_PER_SM": 1},
        # STAGE (record_stage.py): the upper triangles loaded through shared memory (rows
        # of 7) and the eigenvalues stored through it (rows of 3), at the expert's pick
        # otherwise (whose own STAGE is 0)
        "expert_pick_staged": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "UNROLL": 0,
                               "FAST_MATH": 1, "FAST_DIV": 0, "STAGE": 1,
                               "MIN_BLOCKS_PER_SM": 1},
    }, {"pick": {"THREADS": 64, "ITEMS": 2, "STAGE": 0, "RSQRT": 1, "MIN_BLOCKS": 1},
        "pick_exact": {"THREADS": 64, "ITEMS": 2, "STAGE": 0, "RSQRT": 0, "MIN_BLOCKS": 1},
        "pick_one_item": {"THREADS": 64, "ITEMS": 1, "STAGE": 0, "RSQRT": 1,
                          "MIN_BLOCKS": 1}}),
    # compute-bound (set 12): the first contact wrapped its items (1.01x; the expert 1.50x at
    # THREADS 32, STAGE 1, RECIP 1, MIN_BLOCKS 1); now the items interleave in the series
    # (a Mat4 object per item) and the term's division by (float)k is FAST_DIV. The lift at
    # the expert's pick in its knobs (no staging: the lift has none), without FAST_DIV (the
    # reciprocal's share), at 2 matrices a thread; the expert at its pick, direct loads
    # (STAGE 0: the staging's share, the part the lift cannot reach) and dividing (RECIP 0)
    "expm4_taylor": ("corpus_compute_unseen12", {
        "expert_pick": {"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 1, "FAST_DIV": 1,
                        "MIN_BLOCKS_PER_SM": 1},
        "expert_pick_div": {"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 1, "FAST_DIV": 0,
                            "MIN_BLOCKS_PER_SM": 1},
        "items2": {"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 2, "FAST_DIV": 1,
                   "MIN_BLOCKS_PER_SM": 1},
        # STAGE (record_stage.py): the matrices loaded and stored through shared memory,
        # rows of 17, E in A's rows (2176 B and 72 registers at 32 threads, the expert's
        # pick's own); at 2 matrices a thread; at the kernel's 128 threads
        "staged": {"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 1, "FAST_DIV": 1, "STAGE": 1,
                   "MIN_BLOCKS_PER_SM": 1},
        "staged_items2": {"BLOCK_THREADS": 32, "ITEMS_PER_THREAD": 2, "FAST_DIV": 1,
                          "STAGE": 1, "MIN_BLOCKS_PER_SM": 1},
        "staged_128": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "FAST_DIV": 1,
                       "STAGE": 1, "MIN_BLOCKS_PER_SM": 1},
    }, {"pick": {"THREADS": 32, "STAGE": 1, "RECIP": 1, "MIN_BLOCKS": 1},
        "pick_direct": {"THREADS": 32, "STAGE": 0, "RECIP": 1, "MIN_BLOCKS": 1},
        "pick_div": {"THREADS": 32, "STAGE": 1, "RECIP": 0, "MIN_BLOCKS": 1}}),
    # compute-bound (set 12): the first contact ran each item's Clenshaw loop whole in its
    # turn (the helper stayed a call: 1.01x; the expert 1.61x at THREADS 128, ITEMS 8, SMEM 1,
    # UNROLL 8); now the helper is inlined, the items share the loop (UNROLL) and TABLE
    # stages the coefficients as doubles. The lift at the expert's pick in its knobs, with
    # the coefficients from global memory (TABLE 0), at 4 points a thread; the expert at its
    # pick and from global memory (SMEM 0)
    "cheb128_f64": ("corpus_compute_unseen12", {
        "expert_pick": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 8, "UNROLL": 8, "TABLE": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_global": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 8, "UNROLL": 8,
                               "TABLE": 0, "MIN_BLOCKS_PER_SM": 0},
        "items4": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "UNROLL": 8, "TABLE": 1,
                   "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 128, "ITEMS": 8, "SMEM": 1, "UNROLL": 8},
        "pick_global": {"THREADS": 128, "ITEMS": 8, "SMEM": 0, "UNROLL": 8}}),
    # compute-bound (set 13): a double power series per point, a do-while to a data-dependent
    # stop, a double division a term (first contact 0.99x at 672 threads, 1 item; the expert
    # 3.37x at THREADS 128, ITEMS 4, CHECK 4, RECIP 1). The lift at the expert's threads and
    # items and its tune's pick; the expert at its pick and with each of its two series knobs
    # off in turn (RECIP 0: a division a term; CHECK 1: a test a term) and both off: which
    # knob holds the gap
    "bessel_i0_series": ("corpus_compute_unseen13", {
        "expert_pick": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 672, "ITEMS_PER_THREAD": 1, "MIN_BLOCKS_PER_SM": 0},
        "items1_128": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "MIN_BLOCKS_PER_SM": 0},
        # TABLE (table_open.py): 1 / k^2 from a shared table, as the expert's RECIP
        "expert_pick_table": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "TABLE": 1,
                              "MIN_BLOCKS_PER_SM": 0},
        "tune_pick_table": {"BLOCK_THREADS": 672, "ITEMS_PER_THREAD": 1, "TABLE": 1,
                            "MIN_BLOCKS_PER_SM": 0},
        "items1_128_table": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "TABLE": 1,
                             "MIN_BLOCKS_PER_SM": 0},
        # CHECK_EVERY (ilp_series_exit.py): the convergence test once every few trips, as the
        # expert's CHECK; at the expert's pick in the lift's knobs (64 registers on sm_90, no
        # spills; the expert's 56: the items' counter one per thread and the factor past the
        # table 1.0 / d(k) as the expert's, since 0820d99), at every 8 trips, at one item
        "expert_pick_check": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "CHECK_EVERY": 4,
                              "TABLE": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_check8": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "CHECK_EVERY": 8,
                               "TABLE": 1, "MIN_BLOCKS_PER_SM": 0},
        "items1_128_check": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "CHECK_EVERY": 4,
                             "TABLE": 1, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 128, "ITEMS": 4, "CHECK": 4, "RECIP": 1},
        "pick_div": {"THREADS": 128, "ITEMS": 4, "CHECK": 4, "RECIP": 0},
        "pick_check1": {"THREADS": 128, "ITEMS": 4, "CHECK": 1, "RECIP": 1},
        "pick_plain": {"THREADS": 128, "ITEMS": 4, "CHECK": 1, "RECIP": 0},
        "items1_recip": {"THREADS": 128, "ITEMS": 1, "CHECK": 4, "RECIP": 1}}),
    # compute-bound (set 13): a 16 -> 16 channel 3 x 3 convolution, blockIdx.z = image * 16 +
    # output channel (0.51x at 04:15Z: the lift 1.31x, the expert 2.56x at BX 64, BY 8, COT 16,
    # SMEM 0). The lift now takes output channels a thread along the split z (CO_PER_THREAD,
    # 3b48dc9: b = z / (16 / CO), co = z % (16 / CO) * CO): at the expert's pick in its knobs
    # (58 registers on sm_90, no spills; the expert's 64), with the channel loop unrolled
    # whole under MIN 1 (64), with four channels a thread, and as written; the expert at its
    # pick, with one, four and sixteen channels a thread and from shared memory
    "conv3x3_c16_nchw": ("corpus_compute_unseen13", {
        "expert_pick": {"BLOCK_X": 64, "BLOCK_Y": 8, "CO_PER_THREAD": 16, "MIX_UNROLL": 0,
                        "ITEMS_X": 1, "ITEMS_Y": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_unroll16": {"BLOCK_X": 64, "BLOCK_Y": 8, "CO_PER_THREAD": 16,
                                 "MIX_UNROLL": 16, "ITEMS_X": 1, "ITEMS_Y": 1,
                                 "MIN_BLOCKS_PER_SM": 1},
        "expert_block_co4": {"BLOCK_X": 64, "BLOCK_Y": 8, "CO_PER_THREAD": 4, "MIX_UNROLL": 0,
                             "ITEMS_X": 1, "ITEMS_Y": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_block_co1": {"BLOCK_X": 64, "BLOCK_Y": 8, "CO_PER_THREAD": 1, "MIX_UNROLL": 0,
                             "ITEMS_X": 1, "ITEMS_Y": 1, "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"BLOCK_X": 16, "BLOCK_Y": 16, "CO_PER_THREAD": 1, "MIX_UNROLL": 0,
                       "ITEMS_X": 1, "ITEMS_Y": 1, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 64, "BY": 8, "COT": 16, "SMEM": 0},
        "pick_cot1": {"BX": 64, "BY": 8, "COT": 1, "SMEM": 0},
        "pick_cot4": {"BX": 64, "BY": 8, "COT": 4, "SMEM": 0},
        "pick_smem": {"BX": 64, "BY": 8, "COT": 16, "SMEM": 1}}),
    # memory-bound (set 13): a depthwise 5 x 5 convolution, one plane per block z, taps
    # walked by pointer (first contact 1.00x, 27 % of a copy; the expert 2.29x, 62 %, at BX
    # 128, BY 2, RY 8, SMEM 1). The lift (pointer_taps then conv's OUT_Y / OUT_X; no shared
    # tile yet) at the expert's pick in its knobs, with two columns too, and as written; the
    # expert at its pick and from global memory (SMEM 0): how much of the gap is the tile
    "dwconv5_nchw": ("corpus_compute_unseen13", {
        "expert_pick": {"BLOCK_X": 128, "BLOCK_Y": 2, "OUT_Y": 8, "OUT_X": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_x2": {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 8, "OUT_X": 2,
                           "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_Y": 1, "OUT_X": 1,
                       "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 128, "BY": 2, "RY": 8, "SMEM": 1},
        "pick_global": {"BX": 128, "BY": 2, "RY": 8, "SMEM": 0}}),
    # memory-bound (set 14): a 3 x 3 edge-clamped median through a helper class (first
    # contact 1.24x, 47 % of a copy, at 64 x 16, ITEMS_Y 8, from global; the expert 1.51x,
    # 57 %, at BX 32, BY 4, RY 4, SMEM 1). The lift (gather_stage's USE_SMEM) at the
    # expert's pick in its knobs, staged and from global, and the first contact's pick; the
    # expert at its pick and from global: how much of the gap the tile closes
    "median3x3_clamp": ("corpus_compute_unseen14", {
        "expert_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_X": 1, "ITEMS_Y": 4,
                        "USE_SMEM": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_global": {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_X": 1, "ITEMS_Y": 4,
                               "USE_SMEM": 0, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_X": 64, "BLOCK_Y": 16, "ITEMS_X": 1, "ITEMS_Y": 8,
                      "USE_SMEM": 0, "MIN_BLOCKS_PER_SM": 2},
        "tune_pick_tile": {"BLOCK_X": 64, "BLOCK_Y": 16, "ITEMS_X": 1, "ITEMS_Y": 2,
                           "USE_SMEM": 1, "MIN_BLOCKS_PER_SM": 2},
    }, {"pick": {"BX": 32, "BY": 4, "RY": 4, "SMEM": 1},
        "pick_global": {"BX": 32, "BY": 4, "RY": 4, "SMEM": 0}}),
    # memory-bound (set 14): a bilinear resize of half planes, blockIdx.y the plane (first
    # contact 1.46x, 42 % of a copy, at 64 threads x 8 items; the expert 1.78x, 51 %, at
    # THREADS 256, ITEMS 8, PLANES 4). The lift (grid_planes' PLANES_PER_THREAD: every
    # plane's taps loaded before its stores, 74 registers at the pick, no spills; the expert
    # 32) at the expert's pick in its knobs, at one and eight planes, under a 128-register
    # cap (MIN 2: 92, no spills), and the first contact's pick with and without 4 planes; the
    # expert at its pick and at one plane: how much of the gap the planes close
    "resize_bilinear_f16": ("corpus_compute_unseen14", {
        "expert_pick": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 8, "PLANES_PER_THREAD": 4,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_planes1": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 8,
                                "PLANES_PER_THREAD": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_planes8": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 8,
                                "PLANES_PER_THREAD": 8, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_min2": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 8,
                             "PLANES_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 2},
        "tune_pick": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "PLANES_PER_THREAD": 1,
                      "MIN_BLOCKS_PER_SM": 0},
        "tune_pick_planes4": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8,
                              "PLANES_PER_THREAD": 4, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 256, "ITEMS": 8, "PLANES": 4},
        "pick_planes1": {"THREADS": 256, "ITEMS": 8, "PLANES": 1}}),
    # compute-bound (set 14): each point's nearest of 64 __constant__ centroids through a
    # statement lambda (first contact: no template, the lift did not compile; the expert
    # 1.30x at THREADS 64, ITEMS 8, SMEM 0, VEC 0). The lift now writes the lambda into its
    # calls and the items share the centroid loop (4 ld.const a centroid for all 8 items,
    # as the expert's): at the expert's pick in its knobs (63 registers on sm_90, no spills;
    # the expert's 56), unrolled by 4 as the expert's loop, staged, and at 4 items; the
    # expert at its pick and with its float4 load and shared centroids
    "nearest_centroid_d2": ("corpus_compute_unseen14", {
        "expert_pick": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "UNROLL": 8, "STAGE": 0,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_unroll4": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "UNROLL": 4,
                                "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_stage": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 8, "UNROLL": 8,
                              "STAGE": 1, "MIN_BLOCKS_PER_SM": 0},
        "items4_128": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "UNROLL": 8, "STAGE": 0,
                       "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 1, "UNROLL": 8, "STAGE": 0,
                       "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 64, "ITEMS": 8, "VEC": 0, "SMEM": 0},
        "pick_vec": {"THREADS": 64, "ITEMS": 8, "VEC": 1, "SMEM": 0},
        "pick_smem": {"THREADS": 64, "ITEMS": 8, "VEC": 0, "SMEM": 1}}),
    # compute-bound (set 14): a direct 64-point DFT a signal, twiddles in a per-block shared
    # table, a bin a thread, 4 signals a block on threadIdx.y (first contact: nothing lifted,
    # 1.00x; the expert 1.43x at BATCHES 4, KT 4, STAGE 1, UNROLL 4). The lift (block_table's
    # BLOCK_Y, table_items' ITEMS_X and UNROLL, table_stage's STAGE) at the expert's pick in
    # its knobs (sm_90: 40 registers, 2560 B smem, no spills; the expert 50), at MIN 1 (59),
    # from global memory (STAGE 0: 4 B spilled under __launch_bounds__(64, 0)), with the
    # compiler's unrolling, and as written; the expert at its pick, from global memory and at
    # a bin a thread
    "dft64_batched": ("corpus_compute_unseen14", {
        "expert_pick": {"BLOCK_Y": 4, "ITEMS_X": 4, "STAGE": 1, "UNROLL": 4,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_min1": {"BLOCK_Y": 4, "ITEMS_X": 4, "STAGE": 1, "UNROLL": 4,
                             "MIN_BLOCKS_PER_SM": 1},
        "expert_pick_stage0": {"BLOCK_Y": 4, "ITEMS_X": 4, "STAGE": 0, "UNROLL": 4,
                               "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_unroll0": {"BLOCK_Y": 4, "ITEMS_X": 4, "STAGE": 1, "UNROLL": 0,
                                "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"BLOCK_Y": 4, "ITEMS_X": 1, "STAGE": 0, "UNROLL": 0,
                       "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BATCHES": 4, "KT": 4, "STAGE": 1, "UNROLL": 4},
        "pick_stage0": {"BATCHES": 4, "KT": 4, "STAGE": 0, "UNROLL": 4},
        "pick_kt1": {"BATCHES": 4, "KT": 1, "STAGE": 1, "UNROLL": 4}}),
    # compute-bound (set 15): c = a^T b over padded 16 x 16 shared tiles walked by a
    # do-while (first contact 1.14x: the register tile refused the do-while, only TUNED_TILE
    # lifted, 319.0 us; the expert 2.89x, 125.6 us at BM 64, BN 64, BK 32, TM 4, TN 4, PAD
    # 1). The lift (649501d: the do-while read as the for keeping its first pass, then
    # regtile) at the expert's pick in its knobs (sm_90: 48 registers, 16 KB smem, no
    # spills; the expert 43), a 128 x 64 tile of 8 x 4 a thread (76, no spills), and as
    # written; the expert at its pick and unpadded
    "gemm_atb_tiled": ("corpus_compute_unseen15", {
        "expert_pick": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4},
        "tile128x64": {"BM": 128, "BN": 64, "BK": 32, "TM": 8, "TN": 4, "VEC": 4},
        "as_written": {"BM": 16, "BN": 16, "BK": 16, "TM": 1, "TN": 1, "VEC": 1},
    }, {"pick": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "PAD": 1},
        "pick_pad0": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "PAD": 0}}),
    # memory-bound (set 15): the red half of a red-black sweep, 0.93 of its expert at 07:24Z
    # (the tune's pick 128 x 2 threads, 8 rows a thread: 79.2 us; the expert 73.5 at 64 x 2,
    # 2 rows). Search or code? The lift (stencil_rows' OUT_Y: the column's values loaded
    # once, where the kernel reads them) at the expert's pick in its knobs (sm_90: 22
    # registers, 12 ld.global in the PTX; the expert 28 and 10) and at the tune's pick (32,
    # 48); the expert at its pick and at 8 rows a thread
    "redblack_red_sweep": ("corpus_compute_unseen15", {
        "expert_pick": {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_Y": 2, "OUT_X": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_X": 128, "BLOCK_Y": 2, "OUT_Y": 8, "OUT_X": 1,
                      "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 64, "BY": 2, "RY": 2},
        "pick_rows8": {"BX": 128, "BY": 2, "RY": 8}}),
    # compute-bound (set 16): Collatz step counts, a for (;;) left by one break (first
    # contact 0.66 of its expert on the H200: the lift's pick 0.76x of the kernel as
    # written at 64 threads, one item; the expert 1.15x at 128 threads, one orbit, UNROLL 1,
    # SHORTCUT 1). The lift (3a54a16: CHECK_EVERY guarded trips, the expert's UNROLL) at the
    # expert's pick in its knobs (its default; no shortcut: domain math the lift does not
    # invent; sm_90 14 registers, the expert 12), at CHECK_EVERY 4 and at 4 items x 4 (15
    # and 32, no spills), and at the tune's pick; the expert at its pick, without the
    # shortcut, and at UNROLL 4
    "collatz_steps": ("corpus_compute_unseen16", {
        "expert_pick": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "CHECK_EVERY": 1,
                        "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        "check4": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "CHECK_EVERY": 4,
                   "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        "items4_check4": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "CHECK_EVERY": 4,
                          "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 1, "CHECK_EVERY": 1,
                      "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 128, "ITEMS": 1, "UNROLL": 1, "SHORTCUT": 1},
        "pick_no_shortcut": {"THREADS": 128, "ITEMS": 1, "UNROLL": 1, "SHORTCUT": 0},
        "unroll4": {"THREADS": 128, "ITEMS": 1, "UNROLL": 4, "SHORTCUT": 0}}),
    # set 16 at 08:48Z: 0.84 of its expert (84 % of a copy, the lift then BLOCK_THREADS and
    # items only); the column-partials lift (pointer_rows) at the expert's pick spelled in
    # its knobs (sm_90: 40 registers, no spills, 60 ld.global in the PTX, 12 of them v4;
    # the expert at its pick 33 registers, 24, 8 v4), with 4 thread rows and 2 rows in
    # flight, and at its default, beside the expert's pick (TX 32, TY 1, VEC 4, UNROLL 1)
    "lnbwd_colpartials": ("corpus_compute_unseen16", {
        "expert_pick": {"BLOCK_X": 32, "BLOCK_Y": 1, "VEC": 4, "ROW_UNROLL": 1},
        "split4_unroll2": {"BLOCK_X": 64, "BLOCK_Y": 4, "VEC": 4, "ROW_UNROLL": 2},
        "default": {"BLOCK_X": 256, "BLOCK_Y": 1, "VEC": 1, "ROW_UNROLL": 1},
    }, {"pick": {"TX": 32, "TY": 1, "VEC": 4, "UNROLL": 1}}),
    # compute-bound (set 16): a weighted Gaussian sum over shared point tiles, 0.69 of its
    # expert at 08:48Z (the lift then BLOCK_THREADS only: 0.98x; the expert 1.42x at 512
    # threads, a query a thread, unrolled by 4, exp2f). The lift (f0d269b: kTile follows the
    # block, the pointer walk an index loop: ITEMS, JSPLIT, UNROLL; 00502df: FAST_MATH, its
    # __expf for the expert's exp2f) at the expert's pick in its knobs (sm_90 32 registers,
    # no spills, 14 fma + 21 mul + 7 ex2 in the PTX; the expert 24, 14 + 14 + 7), with expf
    # (31, 35 fma), with two queries a thread, with four rows a tile, and at the first
    # contact's tune pick; the expert at its pick and with expf
    "kde2d_tiles": ("corpus_compute_unseen16", {
        "expert_pick": {"BLOCK_THREADS": 512, "ITEMS": 1, "JSPLIT": 1, "UNROLL": 4,
                        "FAST_MATH": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_expf": {"BLOCK_THREADS": 512, "ITEMS": 1, "JSPLIT": 1, "UNROLL": 4,
                             "FAST_MATH": 0, "MIN_BLOCKS_PER_SM": 0},
        "items2": {"BLOCK_THREADS": 256, "ITEMS": 2, "JSPLIT": 1, "UNROLL": 4,
                   "FAST_MATH": 1, "MIN_BLOCKS_PER_SM": 0},
        "rows4": {"BLOCK_THREADS": 128, "ITEMS": 1, "JSPLIT": 4, "UNROLL": 4,
                  "FAST_MATH": 1, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 256, "ITEMS": 1, "JSPLIT": 1, "UNROLL": 0,
                      "FAST_MATH": 0, "MIN_BLOCKS_PER_SM": 1},
    }, {"pick": {"THREADS": 512, "ITEMS": 1, "UNROLL": 4, "EXP2": 1},
        "pick_expf": {"THREADS": 512, "ITEMS": 1, "UNROLL": 4, "EXP2": 0}}),
    # compute-bound (set 17): erf's 64-term series in double in a helper, 0.23 of its expert
    # at 09:53Z (the lift then BLOCK_THREADS, items, MIN_BLOCKS_PER_SM: 1.03x; the expert
    # 4.41x at 128 threads, 4 items, unrolled by 2, reciprocals). The lift (ilp_rcp_counter:
    # RCP, TERM_UNROLL) at the expert's pick in its knobs (sm_90 28 registers, no spills;
    # the expert 46), the term loop unrolled whole (its reciprocals constants: 16 registers,
    # no division call) at 4 items and at 1, the default, and the first contact's tune pick
    "erf_series_f64": ("corpus_compute_unseen17", {
        "expert_pick": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "RCP": 1,
                        "TERM_UNROLL": 2, "MIN_BLOCKS_PER_SM": 0},
        "whole_items4": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "RCP": 1,
                         "TERM_UNROLL": 64, "MIN_BLOCKS_PER_SM": 0},
        "whole_items1": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "RCP": 1,
                         "TERM_UNROLL": 64, "MIN_BLOCKS_PER_SM": 0},
        "default": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "RCP": 0,
                    "TERM_UNROLL": 0, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 960, "ITEMS_PER_THREAD": 1, "RCP": 0,
                      "TERM_UNROLL": 0, "MIN_BLOCKS_PER_SM": 2},
    }, {"pick": {"THREADS": 128, "ITEMS": 4, "UNROLL": 2, "RCP": 1}}),
    # compute-bound (set 17): cube roots by 40 double Newton steps, 0.73 of its expert at
    # 09:53Z (the lift did not compile: tree-sitter read the step macro's (y) - (..) as a
    # cast; the expert 1.36x at 512 threads, one item, unrolled by 8, RCP). The lift
    # (value_casts; ilp_div_rcp's DIV_RCP for the expert's RCP) at the expert's pick in its
    # knobs (sm_90 25 registers, no spills, 8 rcp.rn.f64 + 40 mul.f64; the expert 24, the
    # same), the same dividing, four items of 128 threads (52 registers, no spills), the
    # default; the expert at its pick and dividing
    "cbrt_newton_f64": ("corpus_compute_unseen17", {
        "expert_pick": {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 1, "UNROLL": 8,
                        "DIV_RCP": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_div": {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 1, "UNROLL": 8,
                            "DIV_RCP": 0, "MIN_BLOCKS_PER_SM": 0},
        "items4": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "UNROLL": 8,
                   "DIV_RCP": 1, "MIN_BLOCKS_PER_SM": 0},
        "default": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 1, "UNROLL": 0,
                    "DIV_RCP": 0, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 512, "ITEMS": 1, "UNROLL": 8, "RCP": 1},
        "pick_div": {"THREADS": 512, "ITEMS": 1, "UNROLL": 8, "RCP": 0}}),
    # compute-bound (set 17): a 7 x 7 correlation with four filters over a flat shared
    # window, 0.47 of its expert at 09:53Z (the lift then BLOCK_X/Y held at 16; the expert
    # 2.11x with BX, BY, RY rows a thread, PAD). The lift (3f3e972: the flat window read as
    # rows, the filter table beside it: OUT_X, OUT_Y, PAD) at the expert's pick in its knobs
    # (sm_90 122 registers, no spills, 7032 B smem; the expert 204, no spills, 7032 B), the
    # same unpadded, four rows of a 16 x 8 block, and the default; the expert at its pick
    "corr7x7_bank4": ("corpus_compute_unseen17", {
        "expert_pick": {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_X": 1, "OUT_Y": 8, "PAD": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_nopad": {"BLOCK_X": 64, "BLOCK_Y": 2, "OUT_X": 1, "OUT_Y": 8, "PAD": 0,
                              "MIN_BLOCKS_PER_SM": 0},
        "rows4": {"BLOCK_X": 16, "BLOCK_Y": 8, "OUT_X": 1, "OUT_Y": 4, "PAD": 1,
                  "MIN_BLOCKS_PER_SM": 0},
        "default": {"BLOCK_X": 16, "BLOCK_Y": 16, "OUT_X": 1, "OUT_Y": 1, "PAD": 0,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 64, "BY": 2, "RY": 8, "PAD": 1}}),
    # set 17, memory-bound; nothing lifted at first contact (74 % of a copy; the expert 78 %
    # at WARPS 1, LANES 32, ACC 1): the lift (its reused counter read as each loop's own,
    # ILP on the summing pass) at the expert's pick spelled in its knobs (sm_90 32
    # registers, no spills; the expert at its pick 48, no spills), the same with 4 sums a
    # lane, 8 lanes a row with 4 sums and __ldg, and the default (the kernel as written)
    "rowl1_scale_warp": ("corpus_compute_unseen17", {
        "expert_pick": {"ROWS_PER_BLOCK": 1, "LANES": 32, "ILP": 1, "LDG": 0,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_ilp4": {"ROWS_PER_BLOCK": 1, "LANES": 32, "ILP": 4, "LDG": 0,
                             "MIN_BLOCKS_PER_SM": 0},
        "lanes8_ilp4_ldg": {"ROWS_PER_BLOCK": 4, "LANES": 8, "ILP": 4, "LDG": 1,
                            "MIN_BLOCKS_PER_SM": 0},
        "default": {"ROWS_PER_BLOCK": 4, "LANES": 32, "ILP": 1, "LDG": 0,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"WARPS": 1, "LANES": 32, "ACC": 1},
        "default": {"WARPS": 4, "LANES": 32, "ACC": 1}}),
    # set 18, memory-bound; 54 % of a copy at first contact (11:45Z: WARPS_PER_BLOCK, LANES
    # only; the expert 92 % at WARPS 2, LANES 32, ACC 1, VEC 1 = float4): the lift (8d5d92c:
    # the lane loop `live && j < cols` read as `j < cols` under `live`, so VEC and
    # ITEMS_PER_THREAD) at the expert's pick spelled in its knobs (sm_90 28 registers, no
    # spills, one ld.global.v4.f32; the expert at its pick 29, no spills), the chain's loads
    # ahead without vectors (4 floats a lane in flight, bit for bit with the kernel: 30
    # registers), float4 with two ahead, and the default (the kernel as written)
    "welford_rows_warp": ("corpus_compute_unseen18", {
        "expert_pick": {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "loads_ahead4": {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 1, "ITEMS_PER_THREAD": 4,
                         "MIN_BLOCKS_PER_SM": 0},
        "vec4_ahead2": {"WARPS_PER_BLOCK": 2, "LANES": 32, "VEC": 4, "ITEMS_PER_THREAD": 2,
                        "MIN_BLOCKS_PER_SM": 0},
        "default": {"WARPS_PER_BLOCK": 8, "LANES": 32, "VEC": 1, "ITEMS_PER_THREAD": 1,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"WARPS": 2, "LANES": 32, "ACC": 1, "VEC": 1},
        "default": {"WARPS": 8, "LANES": 32, "ACC": 1, "VEC": 0}}),
    # set 18, memory-bound; nothing lifted at first contact (19 % of a copy; the expert 68 %
    # at TX 4, TY 8, RPT 8, PAD 0): the lift (tile_batch: a CTA per fixed-size data tile,
    # TX x TY 8 x 8 tiles a CTA, RPT rows a thread, PAD) at the expert's pick spelled in its
    # knobs (H200 12:32Z 148.8 us against the expert's 91.8 us; since 1006413 the table is
    # filled once a CTA by its flat thread index outside the rows, 1 cosf in the PTX where
    # tile 0's fill in the unrolled row loop had 16: sm_90 38 registers, no stack frame, no
    # spills, 16640 B smem; its loop for CTAs inside the grid has the expert's 8 pixel loads,
    # 8 stores and 144 ld.shared; the expert at its pick 40, no spills, 16640 B), the same
    # padded (37), a 2 x 4 mix of two rows a thread, padded (32), and the default (27; the
    # kernel as written 30); lift_ro: the pick with in __restrict__ (the expert's loads are
    # ld.global.nc, the lift's ld.global)
    "dct8x8_blocks": ("corpus_compute_unseen18", {
        "expert_pick": {"TX": 4, "TY": 8, "RPT": 8, "PAD": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_pad": {"TX": 4, "TY": 8, "RPT": 8, "PAD": 1, "MIN_BLOCKS_PER_SM": 0},
        "mix": {"TX": 2, "TY": 4, "RPT": 2, "PAD": 1, "MIN_BLOCKS_PER_SM": 0},
        "default": {"TX": 1, "TY": 1, "RPT": 1, "PAD": 0, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"TX": 4, "TY": 8, "RPT": 8, "PAD": 0},
        "default": {"TX": 1, "TY": 1, "RPT": 1, "PAD": 0}}),
    # compute-bound (set 18): J0 by Miller's backward recurrence in double, 0.28 of its
    # expert at first contact (11:45Z: BLOCK_THREADS, ITEMS_PER_THREAD over the uninlined
    # bessel::j0_miller<60> call; the expert 3.62x at 128 threads, 4 items, RCP, PAIR). The
    # lift (6e1f7d1: the namespace opened and the template inlined, items interleaved in the
    # recurrence; c270e92: DIV_RCP on 2.0 * k / x, x never written) at the expert's pick in
    # its knobs (sm_90 54 registers, no spills, PTX 4 rcp.rn.f64 hoisted + 4 div.rn.f64
    # (the final normalisation) + 40 mul.f64; the expert at its pick 44, no spills, 8 div +
    # 52 mul), the same dividing, with the branch as selects, and the default (32); the
    # expert at its pick and without PAIR (its two orders a step, which the lift lacks)
    "besselj0_miller_f64": ("corpus_compute_unseen18", {
        "expert_pick": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "DIV_RCP": 1,
                        "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        # the rescale's four tests OR-ed, its item loop behind one branch (ANY_BRANCH: sm_90
        # 46 registers, no spills; the trip without a rescale has no DMUL or FSEL of it)
        "expert_pick_any": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "DIV_RCP": 1,
                            "ANY_BRANCH": 1, "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_any_i8": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 8, "DIV_RCP": 1,
                               "ANY_BRANCH": 1, "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_div": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "DIV_RCP": 0,
                            "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_branchless": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4,
                                   "DIV_RCP": 1, "BRANCHLESS": 1, "MIN_BLOCKS_PER_SM": 0},
        "default": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 1, "DIV_RCP": 0,
                    "BRANCHLESS": 0, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 128, "ITEMS": 4, "RCP": 1, "PAIR": 1},
        "pick_nopair": {"THREADS": 128, "ITEMS": 4, "RCP": 1, "PAIR": 0}}),
    # compute-bound (set 19): a probe a thread walks every charge straight from global memory
    # (first contact 1.83x at 160 threads, 1 item, UNROLL 8, MIN 4; the expert 4.01x at
    # THREADS 128, ITEMS 1, TILE 512, UNROLL 4). walk_rounds walks the charges in rounds of
    # TILE staged in shared memory (TILE): the lift at the expert's pick in its knobs (sm_90
    # 30 registers, no spills, 8 KiB smem; its loop 4 LDS.128 then the pairs, as the
    # expert's at 40 registers), the same from global memory (TILE 0), the tune's
    # first-contact pick (TILE 0) and four items in rounds of 512; the expert at its pick
    # and from global memory
    "coulomb_pot_tiles": ("corpus_compute_unseen19", {
        "expert_pick": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "UNROLL": 4,
                        "TILE": 512, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_global": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 1, "UNROLL": 4,
                               "TILE": 0, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 160, "ITEMS_PER_THREAD": 1, "UNROLL": 8,
                      "TILE": 0, "MIN_BLOCKS_PER_SM": 4},
        "items4": {"BLOCK_THREADS": 128, "ITEMS_PER_THREAD": 4, "UNROLL": 4,
                   "TILE": 512, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 128, "ITEMS": 1, "TILE": 512, "UNROLL": 4},
        "pick_global": {"THREADS": 128, "ITEMS": 1, "TILE": 0, "UNROLL": 4},
        "items4_tile": {"THREADS": 128, "ITEMS": 4, "TILE": 512, "UNROLL": 4}}),
    # compute-bound (set 19): C = diag(s) A B^T column-major, 1-based (first contact 1.16x:
    # BLOCK_X/Y, ITEMS_X/Y only; the expert 2.66x at BM 32, BN 128, BK 32, TM 4, TN 4, PAD
    # 0). The naive product's register tile (no shared tiles) lifted through the + 1 shift:
    # the lift at the expert's pick in its knobs (x runs over C's rows: 8 x 32 threads of
    # 4 x 4; sm_90 48 registers, no spills; the expert at its pick 48, 20480 B smem, no
    # spills), a 2 x 2 tile over 16 x 16 and the default; the expert at its pick. The k
    # slices (regtile_kslice: BK, PAD): the expert's pick in the lift's knobs from shared
    # slices of 32 (sm_90 56 registers, 20480 B smem, no spills), from slices of 16 padded
    # (56 registers, 10368 B, no spills), and from global memory (BK 0: 1.05x, as before)
    "gemm_cm_bt_rowscale": ("corpus_compute_unseen19", {
        "expert_pick": {"THREADS_X": 8, "THREADS_Y": 32, "TM": 4, "TN": 4, "BK": 32,
                        "PAD": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_bk16": {"THREADS_X": 8, "THREADS_Y": 32, "TM": 4, "TN": 4, "BK": 16,
                             "PAD": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_bk0": {"THREADS_X": 8, "THREADS_Y": 32, "TM": 4, "TN": 4, "BK": 0,
                            "PAD": 0, "MIN_BLOCKS_PER_SM": 0},
        "default": {"THREADS_X": 16, "THREADS_Y": 16, "TM": 1, "TN": 1, "BK": 0, "PAD": 0,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BM": 32, "BN": 128, "BK": 32, "TM": 4, "TN": 4, "PAD": 0}}),
    # compute-bound (set 20): C = A^T A / K + 0.01 I over 16 x 16 shared tiles read k-major,
    # its counters declared before their loops (first contact: nothing lifted, 0.38; the
    # expert 2.66x at BM 64, BN 64, BK 32, TM 4, TN 4, PAD 1). The register tile over a
    # counter declared before its loop (b8ae40c): the lift at the expert's pick in its knobs
    # (VEC 4, the lift's float4 loads where aligned and in bounds; sm_90 64 registers, 16384 B
    # smem, no spills; the expert 48, 16640 B, no spills; both loops 256 LDS and 512 FFMA at
    # k 32), the same from slices of 16, an 8 x 4 tile over 128 x 64 (109 registers, no
    # spills) and the default; the expert at its pick
    "gram_ata_ridge": ("corpus_compute_unseen20", {
        "expert_pick": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "VEC": 4},
        "expert_pick_bk16": {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "VEC": 4},
        "tile8x4": {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4, "VEC": 4},
        "default": {"BM": 16, "BN": 16, "BK": 16, "TM": 1, "TN": 1, "VEC": 1},
    }, {"pick": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "PAD": 1}}),
    # memory-bound (set 20): a stride-2 3x3 filter, weights in __constant__, its point in an
    # int2 (first contact: BLOCK_X/Y only, 71 % of a copy at 32 x 4; the expert 89 % at BX 64,
    # BY 2, RY 4, SMEM 0). The int2 point read as two locals (point_split): ITEMS_X/Y; the
    # lift at the expert's pick in its knobs (ITEMS_Y the expert's RY: rows a block's height
    # apart; sm_90 22 registers, no spills; the expert 32), eight rows a thread, the
    # first-contact pick; the expert at its pick and staged in shared memory
    "conv3x3_s2_sat": ("corpus_compute_unseen20", {
        "expert_pick": {"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_X": 1, "ITEMS_Y": 4,
                        "MIN_BLOCKS_PER_SM": 0},
        "rows8": {"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_X": 1, "ITEMS_Y": 8,
                  "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_X": 1, "ITEMS_Y": 1,
                      "MIN_BLOCKS_PER_SM": 4},
    }, {"pick": {"BX": 64, "BY": 2, "RY": 4, "SMEM": 0, "PAD": 0},
        "pick_smem": {"BX": 64, "BY": 2, "RY": 4, "SMEM": 1, "PAD": 1}}),
    # memory-bound (set 19): the 9-point anisotropic step through cooperative groups (first
    # contact: nothing lifted, 61 % of a copy; the expert 87 % at BX 32, BY 4, RY 4, PAD 1).
    # The apron lift (6392864: the block's rank without the z term) at the expert's pick in
    # its knobs (OUT_Y 4 consecutive rows from a register window, where the expert strides
    # its rows by BY; sm_90 32 registers, 2520 B smem, no spills, as the expert's pick), at
    # eight rows (40 registers, no spills) and as written; the expert at its pick
    "aniso9_diffuse_cg": ("corpus_compute_unseen19", {
        "expert_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 1, "OUT_Y": 4, "PAD": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "rows8": {"BLOCK_X": 32, "BLOCK_Y": 4, "OUT_X": 1, "OUT_Y": 8, "PAD": 1,
                  "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"BLOCK_X": 32, "BLOCK_Y": 8, "OUT_X": 1, "OUT_Y": 1, "PAD": 0,
                       "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 32, "BY": 4, "RY": 4, "PAD": 1}}),
    # compute-bound (set 19): Lorenz RK2 in double, a helper for the right-hand side (first
    # contact: the lift did not compile, nothing written; the expert 1.07x at THREADS 256,
    # ITEMS 1, UNROLL 8, STAGE 0). The helper bound under fresh names (a316be9): the lift at
    # the expert's pick in its knobs (sm_90 24 registers, no spills, as the expert's), at
    # four items (56 registers, no spills; the expert 48) and as written; the expert at its
    # pick and at four items
    "lorenz_rk2_f64": ("corpus_compute_unseen19", {
        "expert_pick": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 1, "UNROLL": 8, "STAGE": 0,
                        "MIN_BLOCKS_PER_SM": 0},
        "items4": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 4, "UNROLL": 8, "STAGE": 0,
                   "MIN_BLOCKS_PER_SM": 0},
        "default": {"BLOCK_THREADS": 256, "ITEMS_PER_THREAD": 1, "UNROLL": 2, "STAGE": 0,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 256, "ITEMS": 1, "UNROLL": 8, "STAGE": 0},
        "items4": {"THREADS": 256, "ITEMS": 4, "UNROLL": 8, "STAGE": 0}}),
    # memory-bound (set 20): a warp a row votes on 32-column chunks with __ballot_sync (first
    # contact: nothing lifted, 0.48; the expert 2.08x, 91 % of a copy, at WARPS 2, ROWS 1,
    # UNROLL 8, its loads through __ldg). The vote read as warp-local (3d0afbd): the warps
    # per block, the chunks' loads AHEAD, LDG and ROWS (f019ee6); the lift at the expert's
    # pick in its knobs (sm_90 29 registers, no spills, as the expert's; PTX: 8 ld.global.nc
    # before the 8 votes), the same without LDG (30 registers, 8 ld.global), 16 warps of 4
    # rows (34 registers, no spills), eight chunks ahead over 8 warps and as written; the
    # expert at its pick and at 16 warps of 4 rows
    "row_firsthits_warp": ("corpus_compute_unseen20", {
        "expert_pick": {"WARPS_PER_BLOCK": 2, "ROWS": 1, "AHEAD": 8, "LDG": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_ldg0": {"WARPS_PER_BLOCK": 2, "ROWS": 1, "AHEAD": 8, "LDG": 0,
                             "MIN_BLOCKS_PER_SM": 0},
        "warps16_rows4": {"WARPS_PER_BLOCK": 16, "ROWS": 4, "AHEAD": 8, "LDG": 1,
                          "MIN_BLOCKS_PER_SM": 0},
        "warps8_ahead8": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "AHEAD": 8, "LDG": 1,
                          "MIN_BLOCKS_PER_SM": 0},
        "default": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "AHEAD": 1, "LDG": 0,
                    "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"WARPS": 2, "ROWS": 1, "UNROLL": 8},
        "warps16_rows4": {"WARPS": 16, "ROWS": 4, "UNROLL": 8}}),
    # compute-bound (set 20): velocity Verlet in a template over Steps, Block and T, its force
    # a helper gravity(const Vec2<T>&) of T(1) / sqrt(..) (first contact: items as a per-item
    # wrap, 1.06x at 672 threads, MIN 2; the expert 2.08x at THREADS 512, ITEMS 2, UNROLL 8,
    # VEC 1, RSQRT 1). The helper read as pure (const reference, members, T(1) a conversion)
    # and the typed reciprocal root as FAST_MATH (60c7761): the lift at the expert's pick in
    # its knobs (sm_90 24 registers, no spills, 34 rsqrt.approx: its loop twice, all-live and
    # not; the expert 21, 18), the same with the written roots (FAST_MATH 0: 32, sqrt.rn;
    # the expert's RSQRT 0: 29), one item (16; the expert's 16) and the first-contact tune
    # pick; the expert at its pick, with RSQRT 0 and at one item
    "verlet_orbit_tpl": ("corpus_compute_unseen20", {
        "expert_pick": {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 2, "UNROLL": 8,
                        "FAST_MATH": 1, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_fm0": {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 2, "UNROLL": 8,
                            "FAST_MATH": 0, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_items1": {"BLOCK_THREADS": 512, "ITEMS_PER_THREAD": 1, "UNROLL": 8,
                               "FAST_MATH": 1, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_THREADS": 672, "ITEMS_PER_THREAD": 1, "UNROLL": 0,
                      "FAST_MATH": 0, "STAGE": 0, "MIN_BLOCKS_PER_SM": 2},
    }, {"pick": {"THREADS": 512, "ITEMS": 2, "UNROLL": 8, "VEC": 1, "RSQRT": 1},
        "pick_rsqrt0": {"THREADS": 512, "ITEMS": 2, "UNROLL": 8, "VEC": 1, "RSQRT": 0},
        "pick_items1": {"THREADS": 512, "ITEMS": 1, "UNROLL": 8, "VEC": 1, "RSQRT": 1}}),
    # compute-bound (set 20): the mean of a 64-knot Catmull-Rom spline (knots staged in
    # shared memory) over 64 orbit points, functor objects in a grid-stride loop of 8 trips
    # (first contact 1.07x at 608 threads, VEC 2, 1 item, MIN 2; the expert 1.50x at THREADS
    # 512, SPAN 4, ITEMS 4, UNROLL 4). With its functor objects read as lambdas
    # (functor_objects) the lift interleaves items in rounds of the grid-stride loop: the lift
    # at the expert's pick in its knobs (sm_90 32 registers, no spills; the expert 32), with
    # one item and with no unroll; the expert at its pick, with its items one at a time and
    # with no unroll: how much of 1.50x each gives
    "crspline_rotmean": ("corpus_compute_unseen20", {
        # INDEX_MASK 1: the knots' x % 64 as x & 63, as the expert writes them
        "expert_pick": {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 4,
                        "INDEX_MASK": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_mod": {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 4,
                            "UNROLL": 4, "INDEX_MASK": 0, "MIN_BLOCKS_PER_SM": 0},
        "items1": {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 1, "UNROLL": 4,
                   "INDEX_MASK": 1, "MIN_BLOCKS_PER_SM": 0},
        "unroll1": {"BLOCK_THREADS": 512, "SPAN": 4, "ITEMS_PER_THREAD": 4, "UNROLL": 1,
                    "INDEX_MASK": 1, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 512, "SPAN": 4, "ITEMS": 4, "UNROLL": 4},
        "pick_items1": {"THREADS": 512, "SPAN": 4, "ITEMS": 1, "UNROLL": 4},
        "pick_unroll1": {"THREADS": 512, "SPAN": 4, "ITEMS": 4, "UNROLL": 1}}),
    # compute-bound (set 21): a stride-2 transposed convolution whose taps a pixel's parity
    # picks, `ky = (oy + 1) & 1; while (ky < 4) {..; ky += 2;}` (first contact 0.99x at 32 x
    # 2; the expert 1.98x at BX 32, BY 4, KO 1, UNROLL 1: its four taps written out). With
    # TAP_UNROLL (residue_taps: the loops' trips bounded by their start's range) the lift at
    # the expert's pick in its knobs (sm_90 SASS: a channel 39 instructions, 8 LDG.E, no
    # inner loop; TAP_UNROLL 0: about 98, the row loop run twice; the expert 43, 8
    # LDG.E.CONSTANT; 32 registers each, no spills), the same without the unroll, and the
    # first-contact tune pick; the expert at its pick and with four channels a thread
    "upconv4x4_s2": ("corpus_compute_unseen21", {
        "expert_pick": {"BLOCK_X": 32, "BLOCK_Y": 4, "Z_ITEMS": 1, "TAP_UNROLL": 1,
                        "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_taps0": {"BLOCK_X": 32, "BLOCK_Y": 4, "Z_ITEMS": 1, "TAP_UNROLL": 0,
                              "MIN_BLOCKS_PER_SM": 0},
        "tune_pick": {"BLOCK_X": 32, "BLOCK_Y": 2, "Z_ITEMS": 1, "TAP_UNROLL": 0,
                      "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 32, "BY": 4, "KO": 1, "UNROLL": 1},
        "pick_ko4": {"BX": 32, "BY": 4, "KO": 4, "UNROLL": 1}}),
    # compute-bound (set 21): the Pearson correlation matrix, column-major 1-based macros, a
    # column local set twice (col = ib + ..; col = jb + ..) before the barrier (first
    # contact 1.20x, TILE 32, MIN 2; the expert 2.04x at BM 32, BN 64, BK 32, TM 2, TN 4,
    # PAD 1). With a local per value (reassigned_locals) the register tile
    # lifts, its loads walking the tiles' rows (k, unit stride in X) into padded rows
    # (regtile_order). The expert's pick is a 2 x 4 tile the lift's space leaves out; its
    # third finalist (64 x 64, BK 32, 4 x 4: 737 us against 733) in the lift's knobs (the
    # expert's i, blockIdx.x, is the lift's BN / TN; sm_90 128 registers, no spills; the
    # expert 40: the lift's unrolled load loops keep the 16 columns' addresses over the loop
    # over k, the expert's loops do not unroll) and with BK 16 (80) and 8 (63); the expert
    # at its pick and at that finalist
    "pearson_cm_tiled": ("corpus_compute_unseen21", {
        "expert_pick3": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4},
        "expert_pick3_bk16": {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
        "expert_pick3_bk8": {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4},
    }, {"pick": {"BM": 32, "BN": 64, "BK": 32, "TM": 2, "TN": 4, "PAD": 1},
        "pick3": {"BM": 64, "BN": 64, "BK": 32, "TM": 4, "TN": 4, "PAD": 1}}),
    # compute-bound (set 21): a 16-component Gaussian mixture's log-likelihood in C++17
    # (const auto locals, a lambda; first contact: the lift did not compile, `auto x[ITEMS]`;
    # the expert 1.42x at THREADS 64, ITEMS 3, CACHE 1, FAST 1). The items' copies typed
    # (auto_types) and UNROLL on both passes (max, then sum): the lift at the expert's pick in
    # its knobs (4 items, both passes whole: PTX 1137 instructions against the expert's 1120
    # at 4 items, its CACHE compiling to the same PTX as without; sm_90 80 registers, the
    # expert's ITEMS 4 80, its pick 70; no spills), with 2 items, with the passes as loops
    # (UNROLL 0: the first contact's reach) and with expf/logf; the expert at its pick,
    # without its cache and at 4 items
    "gmm_loglik_k16": ("corpus_compute_unseen21", {
        "expert_pick": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 16,
                        "FAST_MATH": 1, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_items2": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "UNROLL": 16,
                               "FAST_MATH": 1, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_unroll0": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 0,
                                "FAST_MATH": 1, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_fm0": {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 4, "UNROLL": 16,
                            "FAST_MATH": 0, "STAGE": 0, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"THREADS": 64, "ITEMS": 3, "CACHE": 1, "FAST": 1},
        "pick_cache0": {"THREADS": 64, "ITEMS": 3, "CACHE": 0, "FAST": 1},
        "pick_items4": {"THREADS": 64, "ITEMS": 4, "CACHE": 1, "FAST": 1}}),
    # memory-bound (set 21): a running row maximum, a warp a row in chunks of 32 (cooperative
    # groups; first contact 1.00x, 63 % of a copy: BRANCHLESS alone; the expert 1.49x, 93 %,
    # at WARPS 8, ROWS 1, VEC 4: four columns a lane as a float4). With the warps kept whole
    # (the lane read in `base + lane`) and the chunk loop regenerated (WARP_SCAN) the lift at
    # the expert's pick in its knobs (ITEMS 4, VEC 4: sm_90 ld/st.global.v4.f32, 26
    # registers, no spills; the expert 27, its loads ld.global.nc), the same through __ldg
    # (LDG 1: ld.global.nc.v4.f32, 26), with the four columns loaded one at a time (VEC 1),
    # eight columns a lane, and the kernel as written; the expert at its pick and with one
    # column a lane
    "cummax_rows_cg": ("corpus_compute_unseen21", {
        "expert_pick": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "ITEMS_PER_THREAD": 4, "VEC": 4,
                        "LDG": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_ldg": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "ITEMS_PER_THREAD": 4, "VEC": 4,
                            "LDG": 1, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_vec1": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "ITEMS_PER_THREAD": 4, "VEC": 1,
                             "LDG": 0, "MIN_BLOCKS_PER_SM": 0},
        "items8": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "ITEMS_PER_THREAD": 8, "VEC": 4,
                   "LDG": 0, "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"WARPS_PER_BLOCK": 8, "ROWS": 1, "ITEMS_PER_THREAD": 1, "VEC": 1,
                       "LDG": 0, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"WARPS": 8, "ROWS": 1, "VEC": 4},
        "pick_vec1": {"WARPS": 8, "ROWS": 1, "VEC": 1}}),
    # memory-bound (set 21): the CUDA samples' Sobel (magnitude and direction), a shared tile
    # with a one-pixel apron loaded by nested loops, the load's `int gx` declared again as
    # the gradient `float gx` (first contact: nothing lifted, 31 % of a copy; the expert 51 %
    # at BX 64, BY 1, RY 8, SMEM 0, PAD 0). The inner name read as its own (scoped_names)
    # and the nest's USE_SMEM (apron): the lift at the expert's pick in its knobs (OUT_Y 8
    # consecutive rows through a register window, from the source; sm_90 48 registers, no
    # spills, 30 ld.global; the expert 40, no spills, 64 ld.global.nc), the same staged (48,
    # 2640 B smem; the expert's SMEM 1 32) and as written; the expert at its pick and staged
    "sobel_magdir_tile": ("corpus_compute_unseen21", {
        "expert_pick": {"BLOCK_X": 64, "BLOCK_Y": 1, "OUT_X": 1, "OUT_Y": 8, "PAD": 0,
                        "LOAD_FLAT": 0, "USE_SMEM": 0, "MIN_BLOCKS_PER_SM": 0},
        "expert_pick_smem": {"BLOCK_X": 64, "BLOCK_Y": 1, "OUT_X": 1, "OUT_Y": 8, "PAD": 0,
                             "LOAD_FLAT": 0, "USE_SMEM": 1, "MIN_BLOCKS_PER_SM": 0},
        "as_written": {"BLOCK_X": 16, "BLOCK_Y": 16, "OUT_X": 1, "OUT_Y": 1, "PAD": 0,
                       "LOAD_FLAT": 0, "USE_SMEM": 1, "MIN_BLOCKS_PER_SM": 0},
    }, {"pick": {"BX": 64, "BY": 1, "RY": 8, "SMEM": 0, "PAD": 0},
        "pick_smem": {"BX": 64, "BY": 1, "RY": 8, "SMEM": 1, "PAD": 0}}),
}

#: kernel -> its lift's configs timed again with the kernel's const inputs __restrict__
#: (group lift_ro): the lift's loads are LDG.E where the expert's are LDG.E.CONSTANT
READ_ONLY: dict[str, tuple[str, ...]] = {
    "wave2d_o4": ("tune_pick", "expert_pick"),
    "gauss5": ("tune_pick", "expert_pick"),
    # the lift's 169 loads a channel are ld.global, the expert's ld.global.nc (sm_90 PTX at
    # the pick, 144 fma each: the same loop otherwise)
    "conv3x3_c16_nchw": ("expert_pick",),
    # the lift's row loads are ld.global, the expert's ld.global.nc (x __restrict__)
    "welford_rows_warp": ("expert_pick",),
    # the lift's pixel loads are ld.global, the expert's ld.global.nc (in __restrict__)
    "dct8x8_blocks": ("expert_pick",),
    # the lift's charge loads are ld.global, the expert's ld.global.nc (charges __restrict__;
    # with the probe's __restrict__ the lift's 8 loads at the pick are ld.global.nc, sm_90)
    "coulomb_pot_tiles": ("expert_pick",),
    # the lift's A and B loads are ld.global, the expert's __restrict__ ones ld.global.nc
    "gemm_cm_bt_rowscale": ("expert_pick",),
    # the lift's loads are ld.global (13 at the pick, sm_90 PTX), the expert's ld.global.nc (17)
    "aniso9_diffuse_cg": ("expert_pick",),
    # the lift's 36 loads at the pick are ld.global, each row's after the row before's store
    # (src not __restrict__), the expert's ld.global.nc (sm_90 PTX)
    "conv3x3_s2_sat": ("expert_pick", "rows8"),
    # the lift's 8 loads a channel at the pick are LDG.E, the expert's __ldg LDG.E.CONSTANT
    "upconv4x4_s2": ("expert_pick",),
    # the lift's float4 loads at the pick are ld.global, the expert's ld.global.nc (sm_90 PTX)
    "cummax_rows_cg": ("expert_pick",),
    # the lift's 30 loads at the pick are ld.global, the expert's 64 ld.global.nc (sm_90 PTX)
    "sobel_magdir_tile": ("expert_pick",),
}


def read_only(probe: Probe) -> Probe:
    """``probe`` with its kernel's pointer-to-const parameters ``__restrict__`` (ptxas then
    reads them as LDG.E.CONSTANT, the read-only path the experts' ``__restrict__`` /
    ``__ldg`` take): a research variant that isolates the load path, not a lift."""
    source = probe.template.source
    head = re.search(r"__global__.*?\b" + re.escape(probe.template.entry) + r"\s*\(",
                     source, re.DOTALL)
    if head is None:
        raise ValueError(f"{probe.folder.name}: no __global__ {probe.template.entry}( in the "
                         "lift's source")
    close = source.index(")", head.end())
    params = re.sub(r"\bconst\s+(\w+)\s*\*\s*(?!__restrict__)(\w+)",
                    r"const \1* __restrict__ \2", source[head.end():close])
    if params == source[head.end():close]:
        raise ValueError(f"{probe.folder.name}: {probe.template.entry} has no pointer-to-const "
                         f"parameter without __restrict__: ({source[head.end():close]})")
    restricted = source[:head.end()] + params + source[close:]
    return replace(probe, template=replace(probe.template, source=restricted))


#: kernel -> the expert's configs timed again without its __launch_bounds__ minimum of
#: blocks (group expert_nomin): ptxas's own register target, the lift's MIN_BLOCKS_PER_SM 0
NO_MIN_BLOCKS: dict[str, tuple[str, ...]] = {"dwconv3_nhwc": ("pick",)}


def without_min_blocks(probe: Probe) -> Probe:
    """``probe`` with every ``__launch_bounds__(threads, min_blocks)`` in its source written
    ``__launch_bounds__(threads)`` (a research variant, as :func:`read_only`)."""
    source, count = re.subn(r"__launch_bounds__\(([^,()]*(?:\([^()]*\)[^,()]*)*),[^()]*\)",
                            r"__launch_bounds__(\1)", probe.template.source)
    if count == 0:
        raise ValueError(f"{probe.folder.name}: no __launch_bounds__ with a minimum of blocks "
                         f"in {probe.template.source_name}")
    return replace(probe, template=replace(probe.template, source=source))


#: kernel -> the lift's configs timed again without the window's loads-first pass (group
#: lift_nofirst): the checked copy loading each slot at its first use, as before 9dbec2e
NO_LOADS_FIRST: dict[str, tuple[str, ...]] = {
    "dwconv3_nhwc": ("expert_pick", "expert_pick_taps_shared", "expert_pick_min0"),
}


def without_loads_first(probe: Probe) -> Probe:
    """``probe`` with the register window's loads-first pass (templater/const_inner.py's
    LOADS_FIRST: its ``#if .. // LOADS_FIRST:`` block, the pass and the lines that make the
    checked copy read the slots it loaded) taken out: the checked copy then loads each slot
    at its first use through the window's flags (a research variant, as :func:`read_only`)."""
    source, count = re.subn(r"\n#if [^\n]*// LOADS_FIRST:.*?\n#endif\n", "\n",
                            probe.template.source, flags=re.DOTALL)
    if count == 0:
        raise ValueError(f"{probe.folder.name}: no LOADS_FIRST pass in the lift's source")
    return replace(probe, template=replace(probe.template, source=source))


def probe(kernel: str, host_only: bool) -> int:
    """One kernel's document (or, ``host_only``, its configs' places in the spaces)."""
    folder, lift_named, expert_named = KERNELS[kernel]
    lift, expert = lift_and_expert(BENCH / folder / kernel, SHAPE, DTYPE)
    groups = {"lift": (lift, lift_named), "expert": (expert, expert_named)}
    if kernel in READ_ONLY:
        groups["lift_ro"] = (read_only(lift), {k: lift_named[k] for k in READ_ONLY[kernel]})
    if kernel in NO_LOADS_FIRST:
        groups["lift_nofirst"] = (without_loads_first(lift),
                                  {k: lift_named[k] for k in NO_LOADS_FIRST[kernel]})
    if kernel in NO_MIN_BLOCKS:
        groups["expert_nomin"] = (without_min_blocks(expert),
                                  {k: expert_named[k] for k in NO_MIN_BLOCKS[kernel]})
    if host_only:
        return dry_run(groups)
    doc: dict[str, Any] = {"kernel": kernel, "shape": SHAPE, "dtype": DTYPE,
                           "knobs": list(lift.template.param_names)}
    doc["lift"], base_us = timed(lift, lift_named, base=True, copy=True)
    for name, (template, named) in list(groups.items())[1:]:
        doc[name], _ = timed(template, named, base=False)
    print(kernel, "copy", doc["lift"].get("copy_us"), "us")
    return finish(doc, {name: doc[name] for name in groups}, base_us,
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
