"""The fourth held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels. tests/test_held_back_host.py
runs the host checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py
the folder checks, tests/gpu/test_gpu_held_back.py the GPU tier."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

#: A tiled product, a multi-plane filter in constant memory, a per-element solver with an
#: early exit, int8 partials over a fixed grid (verify()), a warp-per-row reduction, a 3-D
#: stencil.
KERNELS = ["atb_product", "conv5_channels", "kepler_solve", "s8_dot_blocks", "row_logsumexp",
           "diffuse7_var"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a non-square block tile, padded
    "atb_product": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1}],
    # the shared tile with two columns and four rows per thread; the global path at 2 x 2
    "conv5_channels": [{"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_X": 2, "ITEMS_Y": 4,
                        "USE_SMEM": 1, "PAD": 1},
                       {"BLOCK_X": 16, "BLOCK_Y": 8, "ITEMS_X": 2, "ITEMS_Y": 2,
                        "USE_SMEM": 0, "PAD": 0}],
    # three orbits a thread with sincosf and the other starter, a block of 96
    "kepler_solve": [{"THREADS": 96, "ITEMS": 3, "SINCOS": 1, "FAST_TRIG": 0, "STARTER": 1}],
    # scalar loads and shuffles over 132 blocks; 16-byte loads and the shared tree
    "s8_dot_blocks": [{"GRID_BLOCKS": 132, "THREADS": 128, "VEC": 1, "FINAL": 1},
                      {"GRID_BLOCKS": 198, "THREADS": 64, "VEC": 16, "FINAL": 0}],
    # 8 lanes a row (4 rows a warp) and the fast exponential
    "row_logsumexp": [{"LANES": 8, "VEC": 2, "WARPS": 4, "FAST_EXP": 1}],
    # a marching column of 4 cells with the shared plane; a deeper 3-D block without it
    "diffuse7_var": [{"BLOCK_X": 16, "BLOCK_Y": 4, "BLOCK_Z": 1, "Z_ITEMS": 4, "USE_SMEM": 1},
                     {"BLOCK_X": 32, "BLOCK_Y": 2, "BLOCK_Z": 2, "Z_ITEMS": 2, "USE_SMEM": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too (its host
#: runs take about 2 s each on 2 cores; s8_dot_blocks' last corner alone takes 20 s).
CORNERS_EVERY_RUN = "kepler_solve"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
struct alignas(16) int4 { int x, y, z, w; };
// glibc declares these names itself: macros, not functions
#define __expf(v) expf(v)
#define __sinf(v) sinf(v)
#define __cosf(v) cosf(v)
#define __sincosf(v, s, c) sincosf(v, s, c)
// four signed bytes of a times those of b, added to c
static inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
  return c;
}
"""

# the int8 inputs of s8_dot_blocks (the unseen3 table has no 8-bit type)
C_TYPES.setdefault("i8", ("signed char", np.int8))

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"s8_dot_blocks", "row_logsumexp", "diffuse7_var"}

SET = HeldBackSet(key="unseen4", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
