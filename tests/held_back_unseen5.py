"""The fifth held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels. tests/test_held_back_host.py
runs the host checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py
the folder checks, tests/gpu/test_gpu_held_back.py the GPU tier."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

#: A half-input tiled product, a column filter in constant memory, a bisection solve with
#: an early exit, counts per chunk (verify()), a block-per-row half normalisation, a 2-D
#: radius-2 stencil with a shared halo.
KERNELS = ["hgemm_scaled", "colfilter13", "implied_vol_bisect", "band_count", "rmsnorm_f16w",
           "wave2d_o4"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square block (16 x 16 threads, 2 x 8 outputs each) over a deep slice; a
    # non-square register tile over a shallow padded slice
    "hgemm_scaled": [{"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 8, "PAD": 0},
                     {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1}],
    # eight outputs a thread from its own window; four a thread from a shared tile
    "colfilter13": [{"BLOCK_X": 32, "BLOCK_Y": 2, "ITEMS_Y": 8, "USE_SMEM": 0},
                    {"BLOCK_X": 64, "BLOCK_Y": 4, "ITEMS_Y": 4, "USE_SMEM": 1}],
    # two options a thread with normcdff, a block of 384; four with the hoisted terms and the
    # fast math over 96 threads
    "implied_vol_bisect": [{"THREADS": 384, "ITEMS": 2, "HOIST": 0, "CDF": 1, "FAST_MATH": 0},
                           {"THREADS": 96, "ITEMS": 4, "HOIST": 1, "CDF": 0, "FAST_MATH": 1}],
    # two chunks a block, scalar; four chunks with float4 loads and the warp stage
    "band_count": [{"CHUNKS": 2, "THREADS": 64, "VEC": 1, "FINAL": 0},
                   {"CHUNKS": 4, "THREADS": 256, "VEC": 4, "FINAL": 1}],
    # a warp a row, 8 rows, VEC 8 falls back to scalar loads (300 columns); 64 threads a row,
    # 4 rows, 4 halves a load and the shuffles
    "rmsnorm_f16w": [{"THREADS": 32, "ROWS": 8, "VEC": 8, "REDUCE": 0},
                     {"THREADS": 64, "ROWS": 4, "VEC": 4, "REDUCE": 1}],
    # two rows a thread from global memory; four rows a thread from the shared patch
    "wave2d_o4": [{"BLOCK_X": 64, "BLOCK_Y": 2, "ITEMS_Y": 2, "USE_SMEM": 0},
                  {"BLOCK_X": 32, "BLOCK_Y": 4, "ITEMS_Y": 4, "USE_SMEM": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "colfilter13"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return (__half)f; }
// one host thread runs every simulated thread: a plain add is atomic
static inline int atomicAdd(int* p, int v) { const int old = *p; *p = v + old; return old; }
static inline float normcdff(float v) { return 0.5f * erfcf(-v * 0.70710678f); }
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
MEMORY_BOUND = {"colfilter13", "band_count", "rmsnorm_f16w", "wave2d_o4"}

SET = HeldBackSet(key="unseen5", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
