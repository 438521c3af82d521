"""The twenty-seventh held-back compute corpus (issue 28): its kernels, the hand-picked
configs its experts are checked at on the host, the CUDA built-ins its kernels use beyond
the unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

KERNELS = ["sgemm_nn_dabc", "conv5x5_zpad_batch", "planck_band_frac",
           "mse_i16_partials", "layernorm_rows_yw", "jacobi7_poisson_flat"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # 16 x 16 threads of 4 x 2 register tiles (64 x 32: one block row, two block columns,
    # the second 13 wide), 8-deep K steps (29 = 3 x 8 + 5), B staged by float4 loads where
    # N % 4 == 0 (45: the scalar fallback); 32 x 8 threads of 4 x 4 (32 x 128: two block
    # rows, the second 5 tall; one block column, 83 columns idle), 32-deep steps (one, 29
    # deep), scalar
    "sgemm_nn_dabc": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "VEC": 4},
                      {"BM": 32, "BN": 128, "BK": 32, "TM": 4, "TN": 4, "VEC": 1}],
    # 32 x 2 threads of 2 x 4 outputs through L1 (two blocks across, the second 19 of 64
    # columns, ten block rows, the last 1 row); 16 x 4 of 4 x 2 from a shared window (two
    # blocks across, the last 13 of 32; three block rows, the last 5 of 16)
    "conv5x5_zpad_batch": [{"BX": 32, "BY": 2, "ITEMS_X": 4, "ITEMS_Y": 2, "USE_SMEM": 0},
                           {"BX": 16, "BY": 4, "ITEMS_X": 2, "ITEMS_Y": 4, "USE_SMEM": 1}],
    # two temperatures a thread of 128, fast intrinsics, the series unrolled, four blocks an
    # SM named (12 blocks, the last 185: a thread's second past n); four a thread of 64,
    # IEEE, the loop as written, two blocks an SM (12 blocks, the last 185)
    "planck_band_frac": [{"THREADS": 128, "ITEMS": 2, "MINB": 4, "FAST": 1, "UNROLL": 1},
                         {"THREADS": 64, "ITEMS": 4, "MINB": 2, "FAST": 0, "UNROLL": 0}],
    # 1024 threads of 16-byte loads, four in flight, the shuffle stage (two blocks: 12345 =
    # 1543 groups of 8 + 1, the one past the groups taken alone); 512 threads of 8-byte
    # loads, two in flight, the shared-memory tree (25 blocks: 3086 groups of 4 + 1; the
    # space keeps BLOCKS * THREADS >= 131072, expert/kernel.toml says why)
    "mse_i16_partials": [{"THREADS": 1024, "BLOCKS": 132, "VEC": 8, "ITEMS": 4, "SHFL": 1},
                         {"THREADS": 512, "BLOCKS": 264, "VEC": 4, "ITEMS": 2, "SHFL": 0}],
    # eight rows a block, float4 groups (203 % 4 != 0: the scalar fallback, 51 groups, the
    # last 3 wide), two in registers, the rest unrolled by 4 (three blocks, the last 5
    # rows); two rows a block, float2 (the fallback, 102 groups), four in registers (all
    # of them: nothing read again)
    "layernorm_rows_yw": [{"WARPS": 8, "VEC": 4, "REGS": 2, "UNROLL": 4},
                          {"WARPS": 2, "VEC": 2, "REGS": 4, "UNROLL": 1}],
    # 64 threads of four x points (8 groups a row, the last 1 wide) marching eight planes
    # (13 = 8 + 5); 512 threads of two x points (15 groups, the last 1 wide) marching four
    # (13 = 4 + 4 + 4 + 1), two blocks an SM named
    "jacobi7_poisson_flat": [{"THREADS": 64, "XV": 4, "ZITEMS": 8, "MINB": 1},
                             {"THREADS": 512, "XV": 2, "ZITEMS": 4, "MINB": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "sgemm_nn_dabc"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"mse_i16_partials", "layernorm_rows_yw", "jacobi7_poisson_flat"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the fast
#: exponential and division (planck_band_frac at FAST = 1).
HOST_EXTRAS = r"""
#define __expf(v) expf(v)
#define __fdividef(a, b) ((a) / (b))
"""
# the int16 samples of mse_i16_partials (the unseen3 table has none)
C_TYPES.setdefault("i16", ("short", np.int16))

SET = HeldBackSet(key="unseen27", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT = SET.root
checked_configs, _folder = SET.checked_configs, SET.folder
