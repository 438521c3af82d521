"""The sixth held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels. tests/test_held_back_host.py
runs the host checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py
the folder checks, tests/gpu/test_gpu_held_back.py the GPU tier."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

#: A tiled product with a fused epilogue over a strided operand, a channels-last depthwise
#: filter in constant memory, an integration loop with a per-element early exit, two sums
#: per chunk (verify()), a block-per-row top-1, a 27-point 3-D stencil.
KERNELS = ["linear_gelu_lda", "dwconv3_nhwc", "pendulum_settle", "moments_partials",
           "row_top1", "box27_smooth"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice; a wide block of 4 x 4 tiles
    "linear_gelu_lda": [{"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 8, "PAD": 0},
                        {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1}],
    # float2 channels, 2 x 2 outputs a thread from global memory; float4 channels with four
    # pixels of one row a thread, the shared tile and the shared taps
    "dwconv3_nhwc": [{"VEC": 2, "PIX": 4, "ITEMS_X": 2, "ITEMS_Y": 2, "USE_SMEM": 0,
                      "TAPS": 1},
                     {"VEC": 4, "PIX": 16, "ITEMS_X": 4, "ITEMS_Y": 2, "USE_SMEM": 1,
                      "TAPS": 1}],
    # three pendulums a thread over 96 threads, unrolled twice, the hardware sine
    "pendulum_settle": [{"THREADS": 96, "ITEMS": 3, "UNROLL": 2, "FAST_SIN": 1}],
    # two chunks a block with float2 and the shuffles; eight with float4 and the shared
    # atomics over 64 threads
    "moments_partials": [{"CHUNKS": 2, "THREADS": 128, "VEC": 2, "FINAL": 1},
                         {"CHUNKS": 8, "THREADS": 64, "VEC": 4, "FINAL": 0}],
    # 8 lanes a row, 8 rows, float4 and the shuffles; 64 lanes a row (two warps), 2 rows,
    # float2, the shuffles then the shared pairs
    "row_top1": [{"LANES": 8, "ROWS": 8, "VEC": 4, "FINAL": 1},
                 {"LANES": 64, "ROWS": 2, "VEC": 2, "FINAL": 1}],
    # four planes a block with the shared plane; two planes from global memory
    "box27_smooth": [{"BLOCK_X": 32, "BLOCK_Y": 4, "Z_ITEMS": 4, "USE_SMEM": 1},
                     {"BLOCK_X": 64, "BLOCK_Y": 2, "Z_ITEMS": 2, "USE_SMEM": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "row_top1"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
// one host thread runs every simulated thread: a plain add is atomic
static inline double atomicAdd(double* p, double v) {
  const double old = *p;
  *p = old + v;
  return old;
}
// glibc declares this name itself: a macro, not a function
#define __sinf(v) sinf(v)
"""

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"dwconv3_nhwc", "moments_partials", "row_top1", "box27_smooth"}

SET = HeldBackSet(key="unseen6", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
