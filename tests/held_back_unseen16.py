"""The sixteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["hash_mix_rounds", "minplus_tiled", "kde2d_tiles",
           "corr5x5_perimg", "lnbwd_colpartials", "collatz_steps"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two keys a thread over 64 threads, rounds unrolled by 4 (24 blocks at the check shape,
    # the last holding 57 keys); eight over 128 unrolled by 2 (three blocks, the last partly)
    "hash_mix_rounds": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4},
                        {"THREADS": 128, "ITEMS": 8, "UNROLL": 2}],
    # a 32 x 64 tile of 2 x 4 register tiles over 8-deep padded slices (the 45 of k end
    # mid-slice, the 37 x 29 uneven over the tile); a 64 x 32 tile of 8 x 2 over 32-deep
    # unpadded slices (one block past all three ends)
    "minplus_tiled": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 1},
                      {"BM": 64, "BN": 32, "BK": 32, "TM": 8, "TN": 2, "PAD": 0}],
    # two queries a thread over 64 threads, the point loop unrolled by 4 with exp2f (tiles of
    # 64: four, the last holding 11, which the unrolled loop leaves 3 of); eight over 128
    # unrolled by 2 with expf (one block past the 301 queries, two tiles, the last of 75)
    "kde2d_tiles": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4, "EXP2": 1},
                    {"THREADS": 128, "ITEMS": 8, "UNROLL": 2, "EXP2": 0}],
    # a 16 x 4 block of two rows a thread with padded tile rows (the 19 rows and 37 columns
    # both uneven over it); a 64 x 2 block of four rows a thread (the last rows past the
    # bottom edge, the block past the right one)
    "corr5x5_perimg": [{"BX": 16, "BY": 4, "RY": 2, "PAD": 1},
                       {"BX": 64, "BY": 2, "RY": 4, "PAD": 0}],
    # 64 x 4 threads of two columns (float2) and two rows unrolled a step (three column
    # blocks, the last partly past the 300; the 22 rows of the last row block end inside a
    # step); 32 x 8 of four columns (float4), four rows a step (three column blocks)
    "lnbwd_colpartials": [{"TX": 64, "TY": 4, "VEC": 2, "UNROLL": 2},
                          {"TX": 32, "TY": 8, "VEC": 4, "UNROLL": 4}],
    # two orbits a thread over 64 threads, two guarded steps a check, with the shortcut
    # (three blocks, the last partly past the 301); four over 128, four steps a check, one
    # at a time (one block)
    "collatz_steps": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 2, "SHORTCUT": 1},
                      {"THREADS": 128, "ITEMS": 4, "UNROLL": 4, "SHORTCUT": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "hash_mix_rounds"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"corr5x5_perimg", "lnbwd_colpartials"}

SET = HeldBackSet(key="unseen16", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
