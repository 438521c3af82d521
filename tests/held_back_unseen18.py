"""The eighteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, and its memory-bound kernels. Its kernels use no
CUDA built-in beyond the unseen3 host prelude.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["haversine_nearest", "dilate5_tile", "dct8x8_blocks", "welford_rows_warp",
           "besselj0_miller_f64", "raysphere_f64"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two points a thread over 128 threads staging 256 of b a round (two rounds, the second
    # partial); four over 64 staging 128 with the arcsine once at the end (300 over 256: two
    # blocks, the second partly)
    "haversine_nearest": [{"THREADS": 128, "ITEMS": 2, "TILE": 256, "HMIN": 0},
                          {"THREADS": 64, "ITEMS": 4, "TILE": 128, "HMIN": 1}],
    # a 32 x 4 block of two rows a thread, padded, in two passes (37 x 45 uneven over it);
    # a 16 x 4 block of four rows a thread in one pass (37 rows over three blocks, the last
    # partly; 45 columns over three, the last partly)
    "dilate5_tile": [{"BX": 32, "BY": 4, "RY": 2, "PAD": 1, "SEP": 1},
                     {"BX": 16, "BY": 4, "RY": 4, "PAD": 0, "SEP": 0}],
    # 2 x 4 image blocks a CTA, two rows a thread, padded (56 columns over 16: four CTAs,
    # the last half; 40 rows over 32: two, the second partly); 4 x 1 with four rows a thread
    "dct8x8_blocks": [{"TX": 2, "TY": 4, "RPT": 2, "PAD": 1},
                      {"TX": 4, "TY": 1, "RPT": 4, "PAD": 0}],
    # 8 lanes a row over two warps with two accumulators and float4s (100 columns: 25
    # float4s, 11 rows over two blocks of eight, the second partly); 16 lanes over four warps
    # with four accumulators, scalar loads (one block of eight rows and one of three)
    "welford_rows_warp": [{"WARPS": 2, "LANES": 8, "ACC": 2, "VEC": 1},
                          {"WARPS": 4, "LANES": 16, "ACC": 4, "VEC": 0}],
    # two elements a thread over 128 threads with the reciprocal, two orders a step (3001
    # over 256: twelve blocks, the last partly); eight over 64 dividing, one order a step
    "besselj0_miller_f64": [{"THREADS": 128, "ITEMS": 2, "RCP": 1, "PAIR": 1},
                            {"THREADS": 64, "ITEMS": 8, "RCP": 0, "PAIR": 0}],
    # two rays a thread over 256 threads with the spheres staged, unrolled by 4 (1000 rays
    # over 512: two blocks, the second partly); four over 64 from global, unrolled by 2
    "raysphere_f64": [{"THREADS": 256, "ITEMS": 2, "SMEM": 1, "UNROLL": 4},
                      {"THREADS": 64, "ITEMS": 4, "SMEM": 0, "UNROLL": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "haversine_nearest"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"dilate5_tile", "dct8x8_blocks", "welford_rows_warp"}

SET = HeldBackSet(key="unseen18", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
