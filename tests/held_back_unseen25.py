"""The twenty-fifth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

KERNELS = ["s8gemm_nt_dp4a", "nhwc_conv5x5_c3to4", "colebrook_newton_f64",
           "huber_partials_gs", "logsoftmax_h16_warp", "take_rows_i64"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # 16 x 16 threads of 8 x 4 register tiles (a 128 x 64 tile: one block over all 77 x 45
    # outputs), 32-word steps (32 + 12 of the 44), int4 staging into padded rows; 16 x 16
    # of 4 x 2 (64 x 32: two block rows and columns, the second of each 13 live), the same;
    # 16 x 16 of 2 x 4 (32 x 64: three block rows, one column 19 idle), 16-word steps
    # (16 + 16 + 12), a word a load, unpadded
    "s8gemm_nt_dp4a": [{"BM": 128, "BN": 64, "TM": 8, "TN": 4, "BKW": 32, "PAD": 1, "VEC": 4},
                       {"BM": 64, "BN": 32, "TM": 4, "TN": 2, "BKW": 32, "PAD": 1, "VEC": 4},
                       {"BM": 32, "BN": 64, "TM": 2, "TN": 4, "BKW": 16, "PAD": 0, "VEC": 1}],
    # 8 x 8 threads of two rows through L1, float4 stores (six blocks across, the last 5
    # wide; 16 rows a block, the last block's fourth thread row half past 37); 32 x 4 of four
    # rows from a shared window (two blocks across, the second 13 wide; three block rows,
    # the last 5 rows)
    "nhwc_conv5x5_c3to4": [{"BX": 8, "BY": 8, "ITEMS_Y": 2, "USE_SMEM": 0, "STORE4": 1},
                           {"BX": 32, "BY": 4, "ITEMS_Y": 4, "USE_SMEM": 1, "STORE4": 1}],
    # two pipes a thread of 256 from Swamee and Jain's start, two divisions a step (1001:
    # the second block mostly idle); three pipes a thread of 64 from 8, one division a step
    # (six blocks, the last partly past n)
    "colebrook_newton_f64": [{"THREADS": 256, "ITEMS": 2, "INIT": 1, "FAST": 0},
                             {"THREADS": 64, "ITEMS": 3, "INIT": 0, "FAST": 1}],
    # 128 threads of two float4 loads a stride, shuffles (13 blocks, the one element past
    # the groups taken by block 0); 512 threads of four scalar loads, the tree (7 blocks,
    # the last partly past n)
    "huber_partials_gs": [{"THREADS": 128, "BLOCKS": 264, "VEC": 4, "ITEMS": 2, "FINAL": 1},
                          {"THREADS": 512, "BLOCKS": 528, "VEC": 1, "ITEMS": 4, "FINAL": 0}],
    # four rows a block, half pairs, the one-pass max and sum, __expf (10 blocks, the last
    # one row); sixteen rows a block of 16-byte groups (42 a row: a lane one or two) kept in
    # registers, three passes from them (three blocks, the last 5 rows)
    "logsoftmax_h16_warp": [{"WARPS": 4, "VEC": 2, "REGS": 0, "ONLINE": 1, "FASTEXP": 1},
                            {"WARPS": 16, "VEC": 8, "REGS": 64, "ONLINE": 0, "FASTEXP": 0}],
    # the flat walk over float4 groups (33 a row), two a thread of 128 (1221 groups over
    # five blocks); four whole rows a block of 64 threads over float4 (31 threads idle a
    # row; ten blocks, the last one row)
    "take_rows_i64": [{"MAP": 0, "THREADS": 128, "VEC": 4, "ITEMS": 2},
                      {"MAP": 1, "THREADS": 64, "VEC": 4, "ITEMS": 4}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "s8gemm_nt_dp4a"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"huber_partials_gs", "logsoftmax_h16_warp", "take_rows_i64"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the half type
#: and the fast exponential (logsoftmax_h16_warp), the 16-byte int vector and dp4a
#: (s8gemm_nt_dp4a).
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return (__half)f; }
// glibc declares these names itself: macros, not functions
#define __expf(v) expf(v)
struct alignas(16) int4 { int x, y, z, w; };
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
// four signed bytes of a times those of b, added to c
static inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
  return c;
}
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"
# the int8 inputs of s8gemm_nt_dp4a and the half rows of logsoftmax_h16_warp (the unseen3
# table has neither)
C_TYPES.setdefault("i8", ("signed char", np.int8))
C_TYPES.setdefault("fp16", ("__half", np.float16))

SET = HeldBackSet(key="unseen25", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _HALF_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
