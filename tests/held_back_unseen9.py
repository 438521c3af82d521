"""The ninth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, the CUDA built-ins its kernels use beyond the unseen3
host prelude, and its memory-bound kernels. tests/test_held_back_host.py runs the host
checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py the
folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

#: A complex (interleaved float pairs) tiled product, stereo block matching over 8-bit
#: images, a digamma in double behind a while loop, a bilateral filter with an exponential
#: per tap, log-sum-exp pairs per block (verify()), a 4-bit weight-only GEMV a warp a row.
KERNELS = ["cgemm_f2", "stereo_sad64", "digamma_f64", "bilateral5", "lse_partials",
           "gemv_q4_rows"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice; a wide block of 2 x 8 tiles
    "cgemm_f2": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1},
                 {"BM": 32, "BN": 128, "BK": 16, "TM": 2, "TN": 8, "PAD": 0}],
    # four pixels a thread on a narrow block through the read-only cache; two pixels a
    # thread on a wide, flat block from the shared tiles
    "stereo_sad64": [{"BX": 8, "BY": 4, "ITEMS_X": 4, "USE_SMEM": 0},
                     {"BX": 32, "BY": 2, "ITEMS_X": 2, "USE_SMEM": 1}],
    # two elements a thread over 192 threads, shifted to 8; three over 96, shifted to 6,
    # two steps a divide
    "digamma_f64": [{"THREADS": 192, "ITEMS": 2, "SHIFT": 8, "PAIRED": 0},
                    {"THREADS": 96, "ITEMS": 3, "SHIFT": 6, "PAIRED": 1}],
    # two rows a thread from global memory with the fast exponential; four rows a thread
    # on a wide block from the shared tile
    "bilateral5": [{"BX": 16, "BY": 4, "ITEMS_Y": 2, "USE_SMEM": 0, "FAST_EXP": 1},
                   {"BX": 64, "BY": 2, "ITEMS_Y": 4, "USE_SMEM": 1, "FAST_EXP": 0}],
    # 384 blocks (the slots past them neutral) of 128 with float2 two deep and the
    # shuffles; 128 blocks of 64 with float4 four deep and the shared tree
    "lse_partials": [{"BLOCKS": 384, "THREADS": 128, "VEC": 2, "UNROLL": 2, "FINAL": 1},
                     {"BLOCKS": 128, "THREADS": 64, "VEC": 4, "UNROLL": 4, "FINAL": 0}],
    # 8 lanes a row, 16 rows, a group a load two deep; 16 lanes, 2 rows (one warp, the
    # second row past the 13 rows in the last block), uint2 four deep
    "gemv_q4_rows": [{"LANES": 8, "ROWS": 16, "VEC": 4, "UNROLL": 2},
                     {"LANES": 16, "ROWS": 2, "VEC": 2, "UNROLL": 4}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "stereo_sad64"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
// glibc declares this name itself: a macro, not a function
#define __expf(v) expf(v)
"""
# the 8-bit images of stereo_sad64 (the unseen3 table has no unsigned 8-bit type)
C_TYPES.setdefault("u8", ("unsigned char", np.uint8))

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"lse_partials", "gemv_q4_rows"}

SET = HeldBackSet(key="unseen9", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
