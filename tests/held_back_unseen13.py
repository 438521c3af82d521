"""The thirteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude. tests/test_held_back_host.py runs the host checks
of every set (tests/held_back_harness.py), tests/test_held_back_folders.py the folder
checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["gemm_splitk4", "gauss16_quad", "conv3x3_c16_nchw", "dwconv5_nchw",
           "maxpool3s2_nchw", "bessel_i0_series"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two points a thread over 64 threads, unrolled by 4, nodes in shared memory (three
    # blocks at the check shape, the last partly past the 301); four a thread over 256,
    # unrolled by 2 (the one block mostly past the end)
    "gauss16_quad": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4, "NODES_SMEM": 1},
                     {"THREADS": 256, "ITEMS": 4, "UNROLL": 2, "NODES_SMEM": 0}],
    # a tall block tile of 2 x 1 register tiles over shallow padded pieces (the 15-deep
    # slices end mid-piece); a wide 32 x 64 tile of 4 x 8 register tiles over pieces deeper
    # than a slice (the check shape one block tall)
    "gemm_splitk4": [{"BM": 32, "BN": 16, "BK": 8, "TM": 2, "TN": 1, "PAD": 1},
                     {"BM": 32, "BN": 64, "BK": 32, "TM": 4, "TN": 8, "PAD": 0}],
    # a wide flat 64 x 2 block of four channels a thread from shared memory (the 19 rows
    # uneven over it); a 32 x 4 block of two channels a thread from global
    "conv3x3_c16_nchw": [{"BX": 64, "BY": 2, "COT": 4, "SMEM": 1},
                         {"BX": 32, "BY": 4, "COT": 2, "SMEM": 0}],
    # a 16 x 4 block of four rows a thread from shared memory (one block down the 19
    # rows, mostly past them); a 64 x 2 block of two rows a thread from global
    "dwconv5_nchw": [{"BX": 16, "BY": 4, "RY": 4, "SMEM": 1},
                     {"BX": 64, "BY": 2, "RY": 2, "SMEM": 0}],
    # 32 threads of two rows by four columns (the 11 rows and 18 columns both uneven over
    # the patch); 64 threads of four rows by two columns
    "maxpool3s2_nchw": [{"THREADS": 32, "ITEMS": 4, "OY": 2},
                        {"THREADS": 64, "ITEMS": 2, "OY": 4}],
    # two points a thread over 128 threads, tested every 4 terms from the table (two blocks
    # at the check shape, the second partly past the 301); four a thread over 64, tested
    # every 2 terms, dividing
    "bessel_i0_series": [{"THREADS": 128, "ITEMS": 2, "CHECK": 4, "RECIP": 1},
                         {"THREADS": 64, "ITEMS": 4, "CHECK": 2, "RECIP": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "gemm_splitk4"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"dwconv5_nchw", "maxpool3s2_nchw"}

SET = HeldBackSet(key="unseen13", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
