"""The eighth held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels. tests/test_held_back_host.py
runs the host checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py
the folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

#: An int32 tiled product with a bias from a constexpr tile, a dilated multi-channel
#: correlation in constant memory behind #ifndef defaults, a Lambert W Halley iteration in a
#: __device__ helper, half-precision absolute maxima per block from a template function
#: (verify()), a warp-per-row cosine similarity, a block-per-row prefix sum.
KERNELS = ["imatmul_bias", "dilated_corr4", "lambertw_halley", "amax_f16_partials",
           "row_cosine", "row_cumsum"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice; a wide block of 2 x 8 tiles
    "imatmul_bias": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1},
                     {"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 8, "PAD": 0}],
    # two rows a thread over a tall narrow block, plain loads; four rows on a wide block of
    # two thread rows through the read-only cache
    "dilated_corr4": [{"BX": 16, "BY": 16, "ITEMS_Y": 2, "LDG": 0},
                      {"BX": 64, "BY": 2, "ITEMS_Y": 4, "LDG": 1}],
    # three elements a thread over 96 threads, accurate; six over 192 with the fast math
    "lambertw_halley": [{"THREADS": 96, "ITEMS": 3, "FAST_MATH": 0},
                        {"THREADS": 192, "ITEMS": 6, "FAST_MATH": 1}],
    # 132 blocks of 128 with 4-byte loads two deep and the shuffles; 198 blocks (the slots
    # past them zeroed) of 64 with 16-byte loads four deep and the shared tree
    "amax_f16_partials": [{"BLOCKS": 132, "THREADS": 128, "VEC": 2, "UNROLL": 2, "FINAL": 1},
                          {"BLOCKS": 198, "THREADS": 64, "VEC": 8, "UNROLL": 4, "FINAL": 0}],
    # 8 lanes a row, 16 rows, float4 two deep; 16 lanes, 2 rows (one warp, the second row
    # group past the 13 rows in the last block), float2 four deep
    "row_cosine": [{"LANES": 8, "ROWS": 16, "VEC": 4, "UNROLL": 2},
                   {"LANES": 16, "ROWS": 2, "VEC": 2, "UNROLL": 4}],
    # one warp of 8 elements a thread, padded (four tiles, the last partial); 128 threads of
    # 4 elements unpadded (a tile of 512: one whole tile and a partial one)
    "row_cumsum": [{"THREADS": 32, "ITEMS": 8, "PAD": 1},
                   {"THREADS": 128, "ITEMS": 4, "PAD": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "imatmul_bias"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
// a lane reading below lane 0 of its group of `width` lanes gets its own value (CUDA's rule)
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const unsigned lane = wb_lane();
  return wb_exchange(v, lane - delta, lane % unsigned(width) < delta);
}
// glibc declares these names itself: macros, not functions
#define __expf(v) expf(v)
#define __logf(v) logf(v)
#define __fdividef(a, b) ((a) / (b))
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"
# the half-precision arguments (the unseen3 table has no 16-bit float type)
C_TYPES.setdefault("fp16", ("__half", np.float16))

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"dilated_corr4", "amax_f16_partials", "row_cosine", "row_cumsum"}

SET = HeldBackSet(key="unseen8", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
