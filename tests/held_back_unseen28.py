"""The twenty-eighth held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

KERNELS = ["hgemm_tn_bstrided", "dil2_conv5_valid", "gcd_binary_pairs",
           "normpair_partials", "knn_dist_h16_warp", "box27_aniso_dacc"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # 16 x 16 threads of 4 x 2 register tiles (64 x 32: one block row, two block columns,
    # the second 13 wide), 8-deep K steps (29 = 3 x 8 + 5: K odd, B's scalar fallback;
    # M = 37 odd, A's too), __half2 asked for; 32 x 8 threads of 4 x 4 (32 x 128: two
    # block rows, the second 5 tall; one block column, 83 columns idle), 32-deep steps
    # (one, 29 deep), scalar
    "hgemm_tn_bstrided": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "VEC": 2},
                          {"BM": 32, "BN": 128, "BK": 32, "TM": 4, "TN": 4, "VEC": 1}],
    # 32 x 2 threads of 2 x 4 outputs through L1 (outputs 39 x 21: one block across, 25
    # columns idle; eleven block rows, the last 1 row); 16 x 4 of 4 x 2 from a shared
    # window (two blocks across, the last 7 of 32; three block rows, the last 5 of 8)
    "dil2_conv5_valid": [{"BX": 32, "BY": 2, "ITEMS_X": 4, "ITEMS_Y": 2, "USE_SMEM": 0},
                         {"BX": 16, "BY": 4, "ITEMS_X": 2, "ITEMS_Y": 4, "USE_SMEM": 1}],
    # two pairs a thread of 128, __ffs shifts, selects, four blocks an SM named (20 blocks,
    # the last 135 pairs: a thread's second past n); four a thread of 64, the loops as
    # written and __ffs off, selects, two blocks an SM (20 blocks, the last 135 pairs)
    "gcd_binary_pairs": [{"THREADS": 128, "ITEMS": 2, "CTZ": 1, "SELECT": 1, "MINB": 4},
                         {"THREADS": 64, "ITEMS": 4, "CTZ": 0, "SELECT": 1, "MINB": 2}],
    # 512 threads of float4 loads, two in flight, the shuffle stage (ten blocks: 20011 =
    # 5002 groups of 4 + 3, those three taken alone); 128 threads of single loads, two in
    # flight, the shared tree, at most 132 blocks (40 blocks)
    "normpair_partials": [{"THREADS": 512, "BLOCKS": 264, "VEC": 4, "ITEMS": 2, "SHFL": 1},
                             {"THREADS": 128, "BLOCKS": 132, "VEC": 1, "ITEMS": 2, "SHFL": 0}],
    # eight warps of two rows, four halves a load (203 % 4 != 0: the scalar fallback),
    # unrolled by 4 (three blocks, the last 5 rows); two warps of four rows, __half2 (the
    # fallback), unrolled by 2 (five blocks, the last warp's rows 36 to 39: three past the
    # last, read again and not written)
    "knn_dist_h16_warp": [{"WARPS": 8, "RPW": 2, "VEC": 4, "UNROLL": 4},
                          {"WARPS": 2, "RPW": 4, "VEC": 2, "UNROLL": 2}],
    # 64 x 1 x 1 threads marching four planes with plane sums kept (7 = 4 + 3: the second
    # march stops short, its last plane the boundary); 16 x 8 x 2 marching two with the 27
    # taps as written (a z block of 4 planes: two blocks, the last 3 planes)
    "box27_aniso_dacc": [{"BX": 64, "BY": 1, "BZ": 1, "ZITEMS": 4, "REUSE": 1},
                        {"BX": 16, "BY": 8, "BZ": 2, "ZITEMS": 2, "REUSE": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "hgemm_tn_bstrided"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"normpair_partials", "knn_dist_h16_warp", "box27_aniso_dacc"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the half type
#: and its pair (hgemm_tn_bstrided, knn_dist_h16_warp), find-first-set (gcd_binary_pairs at
#: CTZ = 1) and an int min (knn_dist_h16_warp).
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
struct alignas(4) __half2 { __half x, y; };
static inline float __low2float(__half2 h) { return (float)h.x; }
static inline float __high2float(__half2 h) { return (float)h.y; }
#define __ffs(v) __builtin_ffs((int)(v))
static inline int min(int a, int b) { return a < b ? a : b; }
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"
# the half inputs of hgemm_tn_bstrided and knn_dist_h16_warp (the unseen3 table has none)
C_TYPES.setdefault("fp16", ("__half", np.float16))

SET = HeldBackSet(key="unseen28", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT = SET.root
checked_configs, _folder = SET.checked_configs, SET.folder
