"""The twenty-second held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["ssim7_tile", "hog9_cells", "crc32_records", "pixel_shuffle_r2", "adamw_step",
           "student_t_cdf_f64"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # 32 x 4 blocks of two rows a thread, the window sums separated, padded (45 columns over
    # two blocks, 37 rows over five, the last of each partly); 16 x 2 of four rows, 49 taps
    "ssim7_tile": [{"BX": 32, "BY": 4, "RY": 2, "SEP": 1, "PAD": 1},
                   {"BX": 16, "BY": 2, "RY": 4, "SEP": 0, "PAD": 1}],
    # four cells across of four rows a thread, private bins (6 cell columns over two blocks,
    # the second half empty); one cell across and four down, eight rows a thread, so a warp
    # spans four cells (shuffles over the x lanes only, four leaders); 2 x 2 cells of two
    # rows a thread (a warp holds two cells' halves: shuffles over x and lane 16, two leaders)
    "hog9_cells": [{"CX": 4, "CY": 1, "PY": 4, "REDUCE": 1},
                   {"CX": 1, "CY": 4, "PY": 8, "REDUCE": 2},
                   {"CX": 2, "CY": 2, "PY": 2, "REDUCE": 2}],
    # two records a thread of 256 from the shared table a byte a step (1001 records over
    # 512: two blocks, the second partly); four a thread of 64, uint4 loads, slicing-by-4
    "crc32_records": [{"THREADS": 256, "ITEMS": 2, "VEC": 1, "TABLE": 1, "SLICE": 1},
                      {"THREADS": 64, "ITEMS": 4, "VEC": 4, "TABLE": 1, "SLICE": 4}],
    # one column of both output rows a unit, four units a thread of 64; both columns of
    # four input pixels (11 wide: the third group partly past the row) and both rows a unit,
    # two units a thread of 128
    "pixel_shuffle_r2": [{"PS_THREADS": 64, "PS_ITEMS": 4, "JV": 1, "XV": 1, "IV": 2},
                         {"PS_THREADS": 128, "PS_ITEMS": 2, "JV": 2, "XV": 4, "IV": 2}],
    # float2 vectors, four a thread of 64, the fast divide (3001: one element of tail);
    # float4 vectors, two a thread of 128, IEEE divides (one element of tail)
    "adamw_step": [{"THREADS": 64, "VEC": 2, "ITEMS": 4, "FAST": 1},
                   {"THREADS": 128, "VEC": 4, "ITEMS": 2, "FAST": 0}],
    # four values a thread of 64, a test every two steps, lgamma(1/2) folded, four blocks an
    # SM asked for (1000 over 256: four blocks, the last partly); two a thread of 256, a
    # test every four steps
    "student_t_cdf_f64": [{"THREADS": 64, "ITEMS": 4, "CHECK": 2, "HALF": 1, "MINB": 4},
                          {"THREADS": 256, "ITEMS": 2, "CHECK": 4, "HALF": 0, "MINB": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "student_t_cdf_f64"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"pixel_shuffle_r2", "adamw_step"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the float
#: atomic add on shared memory, the 16-byte unsigned vector and the fast divide (a macro:
#: the names of its kind are glibc's elsewhere).
HOST_EXTRAS = r"""
// one host thread runs every simulated thread: a plain add is atomic
static inline float atomicAdd(float* p, float v) { const float old = *p; *p = old + v; return old; }
struct alignas(16) uint4 { unsigned x, y, z, w; };
#define __fdividef(a, b) ((a) / (b))
"""

SET = HeldBackSet(key="unseen22", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
