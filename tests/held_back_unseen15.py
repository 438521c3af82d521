"""The fifteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude and unseen10's half type (its HOST_EXTRAS).
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended
from held_back_unseen10 import _HALF_HEADER, HOST_EXTRAS

KERNELS = ["poly_quad_rect", "lj_energy_tiles", "corr1d_taps63", "gemm_atb_tiled",
           "redblack_red_sweep", "xent_rows_f16"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two intervals a thread over 64 threads unrolled by 4 from constant memory (three
    # blocks at the check shape, the last partly past the 301); four a thread over 128
    # unrolled by 2 from registers (one block)
    "poly_quad_rect": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4, "COEF_REGS": 0},
                      {"THREADS": 128, "ITEMS": 4, "UNROLL": 2, "COEF_REGS": 1}],
    # two particles a thread over 64 threads unrolled by 4 (tiles of 128: three, the last
    # of 45, which the unrolled loop leaves 1 of); four over 128 unrolled by 8 (one tile of
    # 512 holding all 301, 5 left after the unrolled groups)
    "lj_energy_tiles": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4, "BRANCHLESS": 1},
                        {"THREADS": 128, "ITEMS": 4, "UNROLL": 8}],
    # two outputs a thread over 64 threads in groups of 7 taps (three spans of 128 a row,
    # the last holding 45); four over 128 in groups of 21 (one span of 512 past the 301)
    "corr1d_taps63": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 7},
                      {"THREADS": 128, "ITEMS": 4, "UNROLL": 21}],
    # a 32 x 64 tile of 2 x 4 register tiles over 8-deep unpadded slices (the 45 of k end
    # mid-slice, the 37 x 29 uneven over the tile); a 64 x 32 tile of 8 x 2 over 32-deep
    # padded slices (one block past all three ends)
    "gemm_atb_tiled": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 0},
                       {"BM": 64, "BN": 32, "BK": 32, "TM": 8, "TN": 2, "PAD": 1}],
    # a 16 x 4 block of two rows a thread (the 19 rows and 37 columns both uneven over it);
    # a 64 x 2 block of four rows a thread (the last thread row past the bottom edge)
    "redblack_red_sweep": [{"BX": 16, "BY": 4, "RY": 2},
                           {"BX": 64, "BY": 2, "RY": 4}],
    # two warps a block of four logits a lane in one online pass (the 301 columns end inside
    # the second group, 13 rows uneven over the blocks); eight warps of two a lane in two passes
    "xent_rows_f16": [{"WARPS": 2, "UNROLL": 4, "ONLINE": 1},
                      {"WARPS": 8, "UNROLL": 2, "ONLINE": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "poly_quad_rect"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"redblack_red_sweep", "xent_rows_f16"}

SET = HeldBackSet(key="unseen15", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
