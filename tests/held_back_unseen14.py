"""The fourteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude and unseen10's half type (its HOST_EXTRAS).
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended
from held_back_unseen10 import _HALF_HEADER, HOST_EXTRAS

KERNELS = ["mc_hits_xorshift", "dft64_batched", "median3x3_clamp", "cdist_l1_tiled",
           "resize_bilinear_f16", "nearest_centroid_d2"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two streams a thread over 64 threads unrolled by 4 (three blocks at the check shape,
    # the last partly past the 301); four a thread over 256 unrolled by 2 (one block)
    "mc_hits_xorshift": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4},
                         {"THREADS": 256, "ITEMS": 4, "UNROLL": 2}],
    # two signals a block of two bins a thread staged in shared memory, unrolled by 4 (the
    # 7 signals uneven over the blocks); eight a block of four bins a thread from global,
    # unrolled by 16 (one block, one signal past the end)
    "dft64_batched": [{"BATCHES": 2, "KT": 2, "STAGE": 1, "UNROLL": 4},
                      {"BATCHES": 8, "KT": 4, "STAGE": 0, "UNROLL": 16}],
    # a 32 x 2 block of four rows a thread from a shared tile (the 19 rows and 37 columns
    # both uneven over it); a 16 x 8 block of two rows a thread from global
    "median3x3_clamp": [{"BX": 32, "BY": 2, "RY": 4, "SMEM": 1},
                        {"BX": 16, "BY": 8, "RY": 2, "SMEM": 0}],
    # a 32 x 32 tile of 2 x 4 register tiles over 8-deep unpadded slices (the 45 features
    # end mid-slice, the 37 x 29 pairs uneven over the tile); a 64 x 64 tile of 8 x 4
    # register tiles over 32-deep padded slices (one block past all three ends)
    "cdist_l1_tiled": [{"BM": 32, "BN": 32, "BK": 8, "TM": 2, "TN": 4, "PAD": 0},
                       {"BM": 64, "BN": 64, "BK": 32, "TM": 8, "TN": 4, "PAD": 1}],
    # two outputs a thread over 64 threads and two planes a block (the 280 outputs of a
    # plane uneven over 128); four a thread over 32 threads and four planes a block (the 2
    # planes half the block's)
    "resize_bilinear_f16": [{"THREADS": 64, "ITEMS": 2, "PLANES": 2},
                            {"THREADS": 32, "ITEMS": 4, "PLANES": 4}],
    # two points a thread over 128 threads by float4 from constant memory (two blocks, the
    # second partly past the 301); four a thread over 64 by scalars from shared memory
    "nearest_centroid_d2": [{"THREADS": 128, "ITEMS": 2, "VEC": 1, "SMEM": 0},
                            {"THREADS": 64, "ITEMS": 4, "VEC": 0, "SMEM": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "mc_hits_xorshift"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"median3x3_clamp", "resize_bilinear_f16"}

SET = HeldBackSet(key="unseen14", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
