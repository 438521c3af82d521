"""The twenty-fourth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

KERNELS = ["sgemv_t_tiled", "floyd_block_phase", "julia_f32_smooth", "rope_rotate_f16",
           "masked_fill_scale", "depthwise_conv1d_k9"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a 64 x 4 block of float2 column pairs over 128-row x tiles (76 columns: one strip of
    # 128, its last 26 threads idle; 301 rows over three tiles), the tree reduction; 16 x 16
    # of float4 groups over 512-row tiles (two strips, the second's last group cut: N is a
    # multiple of four, so every group runs as a vector), the first row adding in turn
    "sgemv_t_tiled": [{"BX": 64, "BY": 4, "VEC": 2, "TILE": 128, "TREE": 1},
                      {"BX": 16, "BY": 16, "VEC": 4, "TILE": 512, "TREE": 0}],
    # 32 x 16 threads of 4 x 2 register tiles (a 64 x 64 block tile), padded: two tiles a
    # side at 77, the second partly past n, the pivot band (32..63) cutting through the
    # first; 16 x 8 threads of 8 x 4 (also 64 x 64), unpadded
    "floyd_block_phase": [{"BX": 32, "BY": 16, "TM": 4, "TN": 2, "PAD": 1},
                          {"BX": 16, "BY": 8, "TM": 8, "TN": 4, "PAD": 0}],
    # a 32 x 4 block of two pixels a thread (77 columns: two blocks across, the second's
    # second pixels mostly past the row), steps unrolled by 4, fast logarithms; 8 x 8 of
    # four pixels (77 = 2 x 32 + 13), unrolled by 2, logf / log2f
    "julia_f32_smooth": [{"BX": 32, "BY": 4, "ITEMS": 2, "UNROLL": 4, "FAST": 1},
                         {"BX": 8, "BY": 8, "ITEMS": 4, "UNROLL": 2, "FAST": 0}],
    # two pairs a thread (8-byte vectors), two heads a block (3 heads: the second block's
    # second row idle), four tokens a block (37: the last block one token); four pairs a
    # thread (16-byte vectors), four heads a block, eight tokens a block
    "rope_rotate_f16": [{"PPT": 2, "HPB": 2, "TOK": 4},
                        {"PPT": 4, "HPB": 4, "TOK": 8}],
    # float4 groups over 128 threads, two a step and two strides (250 groups in one block,
    # the one element left by the first block's first thread); scalars over 64 threads,
    # four a step, one stride (four blocks, the last partly past 1001)
    "masked_fill_scale": [{"THREADS": 128, "VEC": 4, "ITEMS": 2, "STEPS": 2},
                          {"THREADS": 64, "VEC": 1, "ITEMS": 4, "STEPS": 1}],
    # 64 threads of four outputs, two channels a block (301 samples over two blocks, the
    # second partly past; 7 channels: the last block's second row idle), float4 staging
    # asked for (301 is no multiple of four: the scalar staging runs); 128 of two outputs,
    # four channels a block, scalar staging
    "depthwise_conv1d_k9": [{"THREADS": 64, "OPT": 4, "CH": 2, "VEC": 1},
                            {"THREADS": 128, "OPT": 2, "CH": 4, "VEC": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "floyd_block_phase"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"rope_rotate_f16", "masked_fill_scale"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the half
#: type and its pair (rope_rotate_f16), the 4-byte unsigned char vector (masked_fill_scale)
#: and the fast logarithms (julia_f32_smooth).
HOST_EXTRAS = r"""
typedef _Float16 __half;
struct alignas(4) __half2 { __half x, y; };
static inline float __low2float(__half2 h) { return (float)h.x; }
static inline float __high2float(__half2 h) { return (float)h.y; }
static inline __half2 __floats2half2_rn(float a, float b) { return {(__half)a, (__half)b}; }
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
// glibc declares these names itself: macros, not functions
#define __logf(v) logf(v)
#define __log2f(v) log2f(v)
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"
# the half heads of rope_rotate_f16 and the mask bytes of masked_fill_scale (the unseen3
# table has neither)
C_TYPES.setdefault("fp16", ("__half", np.float16))
C_TYPES.setdefault("u8", ("unsigned char", np.uint8))

SET = HeldBackSet(key="unseen24", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
