"""The twenty-third held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

import numpy as np
from held_back_harness import HeldBackSet, prepended
from test_corpus_unseen3 import C_TYPES

KERNELS = ["sph_density_tiles", "trmm_lower_tiled", "bezier_patch_eval", "lbm_d2q9_pull",
           "nv12_to_rgba", "ncc_patch8"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # four particles a thread of 64 over 128-particle tiles (three tiles, the last partial),
    # unrolled by 4; two a thread of 128 over 512-particle tiles, unrolled by 2, the support
    # cut (301 particles: two blocks, the second's items partly past n; one partial tile)
    "sph_density_tiles": [{"THREADS": 64, "ITEMS": 4, "TILE": 128, "UNROLL": 4, "CUT": 0},
                          {"THREADS": 128, "ITEMS": 2, "TILE": 512, "UNROLL": 2, "CUT": 1}],
    # a 32 x 64 block tile of 2 x 4 register tiles (256 threads), 8-deep padded slices
    # (45 rows over two row blocks, six slices on the second, its last on the diagonal; 37
    # columns in one block); 64 x 16 of 4 x 1 (256 threads), 16-deep slices: a single row
    # block, partly past n
    "trmm_lower_tiled": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 1},
                         {"BM": 64, "BN": 16, "BK": 16, "TM": 4, "TN": 1, "PAD": 0}],
    # four samples of a row a thread of 64 with the v-contraction (37 columns: ten units a
    # row, the last holding one sample); two a thread of 256, 16-term sums and rsqrtf (19
    # units a row, the last one sample; 703 units a patch over three blocks)
    "bezier_patch_eval": [{"THREADS": 64, "ITEMS": 4, "REUSE": 1, "RSQ": 0},
                          {"THREADS": 256, "ITEMS": 2, "REUSE": 0, "RSQ": 1}],
    # 16 x 4 threads of four rows a thread from the shared template, padded (46 output
    # columns over three blocks, 38 rows over three, the last partly; a thread's rows past
    # the output); 64 x 2 of eight rows, the template through global memory (one block
    # across, 38 rows over three blocks of 16)
    "ncc_patch8": [{"BX": 16, "BY": 4, "RY": 4, "PAD": 1, "TSM": 1},
                   {"BX": 64, "BY": 2, "RY": 8, "PAD": 0, "TSM": 0}],
    # 32 x 4 blocks of two sites a thread through __ldg (45 columns: one block across, its
    # second stride partly past the row, every wrap inside it; 37 rows over ten blocks);
    # one warp a row of four sites a thread, plain loads (two strides of four used)
    "lbm_d2q9_pull": [{"BX": 32, "BY": 4, "IX": 2, "LDG": 1},
                      {"BX": 32, "BY": 1, "IX": 4, "LDG": 0}],
    # 64 x 2 blocks of two pixels a thread, byte loads (46 pixels in one block, most of
    # its threads idle); 16 x 4 of four a thread, vector loads and pair stores (46 pixels: the
    # twelfth group of a row cut after two, a pixel at a time; 38 rows over ten blocks)
    "nv12_to_rgba": [{"BX": 64, "BY": 2, "PX": 2, "VEC": 0},
                     {"BX": 16, "BY": 4, "PX": 4, "VEC": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "trmm_lower_tiled"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"lbm_d2q9_pull", "nv12_to_rgba"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the 4-byte
#: and 2-byte unsigned char vectors and the 8- and 16-byte unsigned vectors.
HOST_EXTRAS = r"""
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
struct alignas(2) uchar2 { unsigned char x, y; };
static inline uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z,
                                 unsigned char w) { return {x, y, z, w}; }
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
"""
# the 8-bit planes of nv12_to_rgba (the unseen3 table has no unsigned 8-bit type)
C_TYPES.setdefault("u8", ("unsigned char", np.uint8))

SET = HeldBackSet(key="unseen23", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
