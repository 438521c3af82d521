"""The twelfth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude. tests/test_held_back_host.py runs the host checks
of every set (tests/held_back_harness.py), tests/test_held_back_folders.py the folder
checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["gemm_bias_res", "cheb128_f64", "corr9_bank8", "softmax_lenmask", "expm4_taylor",
           "argmin_chunks"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a tall block tile of 2 x 1 register tiles over shallow padded slices; a wide 32 x 64
    # tile of 4 x 8 register tiles over deep slices (the check shape one block tall)
    "gemm_bias_res": [{"BM": 32, "BN": 16, "BK": 8, "TM": 2, "TN": 1, "PAD": 1},
                      {"BM": 32, "BN": 64, "BK": 32, "TM": 4, "TN": 8, "PAD": 0}],
    # two points a thread over 64 threads from global, unrolled by 4 (three blocks at the
    # check shape, the last partly past the 301); four a thread over 128 from shared,
    # unrolled by 2 (the one block mostly past the end)
    "cheb128_f64": [{"THREADS": 64, "ITEMS": 2, "SMEM": 0, "UNROLL": 4},
                    {"THREADS": 128, "ITEMS": 4, "SMEM": 1, "UNROLL": 2}],
    # a 32 x 2 block of 4 rows a thread, padded (the 21 rows uneven over its 8); a 16 x 8
    # block of 2 rows a thread (two blocks down, the second partly past the 21 rows)
    "corr9_bank8": [{"BX": 32, "BY": 2, "IY": 4, "PAD": 1},
                    {"BX": 16, "BY": 8, "IY": 2, "PAD": 0}],
    # a warp a row, four rows a block (the 5 rows uneven over them), float4, one pass; two
    # warps a row, two rows a block, scalar, two passes
    "softmax_lenmask": [{"TPR": 32, "RPB": 4, "VEC": 4, "ONLINE": 1},
                        {"TPR": 64, "RPB": 2, "VEC": 1, "ONLINE": 0}],
    # 64 matrices a block staged through shared memory with divisions (five blocks at the
    # check shape, the last partly past the 301); 256 a block direct, reciprocals, two
    # resident blocks (the second block mostly past the end)
    "expm4_taylor": [{"THREADS": 64, "STAGE": 1, "RECIP": 0, "MIN_BLOCKS": 4},
                     {"THREADS": 256, "STAGE": 0, "RECIP": 1, "MIN_BLOCKS": 2}],
    # 128 threads, four pairs a thread over float2 loads, shuffles; 512 threads, two pairs
    # over float4 loads (the short last chunk's 808 floats in part of a stride), the tree
    "argmin_chunks": [{"THREADS": 128, "ITEMS": 4, "VEC": 2, "SHFL": 1},
                      {"THREADS": 512, "ITEMS": 2, "VEC": 4, "SHFL": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "gemm_bias_res"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"softmax_lenmask", "argmin_chunks"}

SET = HeldBackSet(key="unseen12", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
