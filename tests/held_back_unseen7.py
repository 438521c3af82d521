"""The seventh held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels. tests/test_held_back_host.py
runs the host checks of every set (tests/held_back_harness.py), tests/test_held_back_folders.py
the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

#: A tiled Gaussian kernel matrix from a template-parameter tile, a channel-mixing 1-D
#: convolution in constant memory, a two-method special function with early exits, histogram
#: rows per chunk (verify()), a warp-per-row CSR product, a batched transpose with an affine.
KERNELS = ["rbf_gram", "conv1d_mix7", "incgamma_p", "hist64_partials", "csr_spmv_warp",
           "nchw_to_nhwc_affine"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice; a wide block of 4 x 2 tiles
    "rbf_gram": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1},
                 {"BM": 32, "BN": 128, "BK": 32, "TM": 2, "TN": 4, "PAD": 0}],
    # four samples of two channels a thread from global memory; two samples of eight
    # channels from the shared tile over 192 threads, the channel loop unrolled twice
    "conv1d_mix7": [{"THREADS": 64, "T_ITEMS": 4, "CO": 2, "USE_SMEM": 0, "C_UNROLL": 4},
                    {"THREADS": 192, "T_ITEMS": 2, "CO": 8, "USE_SMEM": 1, "C_UNROLL": 2}],
    # three elements a thread over 96 threads, unrolled twice, the fast math
    "incgamma_p": [{"THREADS": 96, "ITEMS": 3, "UNROLL": 2, "FAST_MATH": 1}],
    # two chunks a block with float2 and two copies; four with float4 and four copies
    "hist64_partials": [{"CHUNKS": 2, "THREADS": 64, "VEC": 2, "COPIES": 2},
                        {"CHUNKS": 4, "THREADS": 128, "VEC": 4, "COPIES": 4}],
    # 4 lanes a row, 64 rows a block, two sums a lane; 8 lanes, four sums, __ldg
    "csr_spmv_warp": [{"LANES": 4, "THREADS": 256, "ILP": 2, "LDG": 0},
                      {"LANES": 8, "THREADS": 64, "ILP": 4, "LDG": 1}],
    # 16-wide tiles, channel tiles first, no pad; 64-wide tiles in the diagonal order
    "nchw_to_nhwc_affine": [{"TILE": 16, "ROWS": 4, "PAD": 0, "ORDER": 1},
                            {"TILE": 64, "ROWS": 4, "PAD": 1, "ORDER": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "csr_spmv_warp"

#: The CUDA built-ins this set's kernels use that the unseen3 prelude has no host form of.
HOST_EXTRAS = r"""
// one host thread runs every simulated thread: a plain add is atomic
static inline int atomicAdd(int* p, int v) { const int old = *p; *p = old + v; return old; }
// glibc declares these names itself: macros, not functions
#define __expf(v) expf(v)
#define __logf(v) logf(v)
#define __fdividef(a, b) ((a) / (b))
"""

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"hist64_partials", "csr_spmv_warp", "nchw_to_nhwc_affine"}

SET = HeldBackSet(key="unseen7", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
