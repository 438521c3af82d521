"""The twenty-sixth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

import re

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

KERNELS = ["bgemm_abt_dyn", "u8_filter7x7_const", "bs_callput_hart",
           "minmax_sum_partials", "rowquant_h16_s8", "varcoef7_zmarch"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # 16 x 16 threads of 4 x 2 register tiles (64 x 32: one block row, two block columns,
    # the second 13 wide), 8-deep K steps (36 = 4 x 8 + 4), float4 staging and shared reads
    # from rows of 12; 32 x 8 of 4 x 4 (32 x 128: two block rows, the second 5 tall, one
    # column 83 idle), 32-deep steps (32 + 4), scalar, rows of 33
    "bgemm_abt_dyn": [{"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 2, "VEC": 4},
                      {"BM": 32, "BN": 128, "BK": 32, "TM": 4, "TN": 4, "VEC": 1}],
    # 64 x 2 threads of eight rows from L1 (one block across, 11 columns idle; 16 rows a
    # block, the third block's last 7 past 41); 16 x 4 of four rows from a shared window
    # (four blocks across, the last 5 wide; three block rows, the last 9 rows)
    "u8_filter7x7_const": [{"BX": 64, "BY": 2, "ITEMS_Y": 8, "USE_SMEM": 0},
                           {"BX": 16, "BY": 4, "ITEMS_Y": 4, "USE_SMEM": 1}],
    # two options a thread of 256 by put-call parity, Hart's CDF, four blocks an SM named
    # (six blocks, the last 441 options); four a thread of 64 in the call / put branch,
    # the erfc CDF, two blocks an SM (12 blocks, the last 185 options: a thread's third and
    # fourth past n)
    "bs_callput_hart": [{"THREADS": 256, "ITEMS": 2, "PARITY": 1, "CND": 0, "MINB": 4},
                        {"THREADS": 64, "ITEMS": 4, "PARITY": 0, "CND": 1, "MINB": 2}],
    # 1024 threads of four scalar loads a step (two blocks of 6173, the second 6172);
    # 128 threads of two float4 loads a step (13 chunks of 952, whole groups: the last 921
    # elements, its one element past the groups taken alone)
    "minmax_sum_partials": [{"THREADS": 1024, "BLOCKS": 132, "VEC": 1, "ITEMS": 4},
                            {"THREADS": 128, "BLOCKS": 264, "VEC": 4, "ITEMS": 2}],
    # eight lanes a row, eight rows a block of two warps, 16-byte loads and 8-byte stores
    # (41 groups a row past the 32 four registers hold: read twice; five blocks, the last
    # 5 rows); 16 lanes a row, 16 rows a block of eight warps, 8-byte loads kept in
    # registers (82 groups: a lane five or six; three blocks, the last 5 rows)
    "rowquant_h16_s8": [{"LANES": 8, "WARPS": 2, "VEC": 8, "REGS": 4},
                        {"LANES": 16, "WARPS": 8, "VEC": 4, "REGS": 16}],
    # 64 x 2 threads through L1, four blocks down z (11 planes in 3 + 3 + 3 + 2; one block
    # across, 27 columns idle); 16 x 8 from shared planes, two blocks down z (6 + 5; three
    # blocks across, the last 5 wide; three block rows, the last 5 rows)
    "varcoef7_zmarch": [{"BX": 64, "BY": 2, "ZSPLIT": 4, "USE_SMEM": 0},
                        {"BX": 16, "BY": 8, "ZSPLIT": 2, "USE_SMEM": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "bgemm_abt_dyn"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"minmax_sum_partials", "rowquant_h16_s8", "varcoef7_zmarch"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the half type
#: and its bits (rowquant_h16_s8), float bits and round-to-nearest-even conversion
#: (rowquant_h16_s8).
HOST_EXTRAS = r"""
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __ushort_as_half(unsigned short u) {
  __half h; std::memcpy(&h, &u, sizeof h); return h;
}
static inline unsigned __float_as_uint(float f) {
  unsigned u; std::memcpy(&u, &f, sizeof u); return u;
}
static inline int __float2int_rn(float f) { return (int)std::nearbyint(f); }
"""
#: The device header whose host form HOST_EXTRAS is.
_HALF_HEADER = "#include <cuda_fp16.h>"
#: ``extern __shared__ T name[];`` (bgemm_abt_dyn: the launch sizes it) as a 64 KB static
#: array on the host (each block runs alone there, as it owns its shared memory on the GPU).
_DYNAMIC_SHARED = re.compile(r"extern __shared__ (\w+) (\w+)\[\];")
# the 8-bit pixels of u8_filter7x7_const, the int8 codes of rowquant_h16_s8 and its half
# rows (the unseen3 table has none of them)
C_TYPES.setdefault("u8", ("unsigned char", np.uint8))
C_TYPES.setdefault("i8", ("signed char", np.int8))
C_TYPES.setdefault("fp16", ("__half", np.float16))

_with_extras = prepended(HOST_EXTRAS, _HALF_HEADER)


def host_source(source: str) -> str:
    """``source`` as the host program compiles it: the set's built-ins before it, dynamic
    shared memory a static array."""
    return _with_extras(_DYNAMIC_SHARED.sub(r"static \1 \2[65536 / sizeof(\1)];", source))


SET = HeldBackSet(key="unseen26", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=host_source)
ROOT = SET.root
checked_configs, _folder = SET.checked_configs, SET.folder
