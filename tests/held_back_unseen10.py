"""The tenth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, the CUDA built-ins its kernels use beyond the unseen3
host prelude, and its memory-bound kernels. tests/test_held_back_host.py runs the host
checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py the
folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

#: An attention-score tile from half inputs, an escape-time image in double, an N-body force
#: step, a multi-channel 3-D convolution, a batched transposed GEMV over half matrices, sums
#: of ragged segments.
KERNELS = ["qk_scores_f16", "mandel_f64", "nbody_accel", "conv3d_c4to8",
           "gemvt_f16_batched", "segment_sums"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice; a wide block of 2 x 8 tiles
    "qk_scores_f16": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1},
                      {"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 8, "PAD": 0}],
    # three pixels a thread on a flat wide block with the squares kept; two a thread on a
    # narrow tall block with the interior test
    "mandel_f64": [{"BX": 64, "BY": 2, "ITEMS": 3, "SQUARES": 1, "INTERIOR": 0},
                   {"BX": 8, "BY": 16, "ITEMS": 2, "SQUARES": 0, "INTERIOR": 1}],
    # two bodies a thread over 64 threads, two rows a tile, unrolled by 4; four bodies a
    # thread over 32 threads, four rows a tile, not unrolled
    "nbody_accel": [{"THREADS": 64, "ITEMS": 2, "JSPLIT": 2, "UNROLL": 4},
                    {"THREADS": 32, "ITEMS": 4, "JSPLIT": 4, "UNROLL": 1}],
    # two planes of four channels a thread on a flat block, weights in shared memory; four
    # planes of two channels (a slab past the 5 planes) on a narrow block from global
    "conv3d_c4to8": [{"BX": 32, "BY": 2, "ZT": 2, "COT": 4, "WSMEM": 1},
                     {"BX": 8, "BY": 16, "ZT": 4, "COT": 2, "WSMEM": 0}],
    # 8-byte loads two rows deep over 4 rows of 32 threads; 16-byte loads four deep over 2
    # rows of 32 threads (the 37 rows uneven over both, the second block's columns partial)
    "gemvt_f16_batched": [{"TX": 32, "VEC": 4, "RSPLIT": 4, "UNROLL": 2},
                          {"TX": 32, "VEC": 8, "RSPLIT": 2, "UNROLL": 4}],
    # 8 lanes a segment (16 a block of 128) with float4 middles two deep; 4 lanes (16 a
    # block of 64, the last block partly past the 203 segments) scalar four deep
    "segment_sums": [{"THREADS": 128, "LANES": 8, "UNROLL": 2, "VEC": 4},
                     {"THREADS": 64, "LANES": 4, "UNROLL": 4, "VEC": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "qk_scores_f16"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"
# the half-precision arguments (the unseen3 table has no 16-bit float type)
C_TYPES.setdefault("fp16", ("__half", np.float16))

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"gemvt_f16_batched", "segment_sums"}

SET = HeldBackSet(key="unseen10", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
