"""The eleventh held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude. tests/test_held_back_host.py runs the host checks
of every set (tests/held_back_harness.py), tests/test_held_back_folders.py the folder
checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["syrk_lower", "fir128_const", "rk4_duffing", "sym3_jacobi", "jacobi9_torus",
           "wht1024_rows"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a non-square register tile over a shallow padded slice, one copy on the diagonal; a
    # 64 tile of 4 x 4 register tiles over deep slices, two copies
    "syrk_lower": [{"BT": 32, "BK": 8, "TM": 4, "TN": 2, "PAD": 1, "SAME": 1},
                   {"BT": 64, "BK": 32, "TM": 4, "TN": 4, "PAD": 0, "SAME": 0}],
    # interleaved outputs through the cache, three blocks a channel at the check shape; a
    # register window of 4 over staged inputs, the channel's one block partly past its end
    "fir128_const": [{"THREADS": 64, "ITEMS": 2, "SMEM": 0, "CONTIG": 0},
                    {"THREADS": 128, "ITEMS": 4, "SMEM": 1, "CONTIG": 1}],
    # two oscillators a thread over 64 threads, the forcing carried, unrolled by 2; four a
    # thread over 32 threads (the one block partly past the 301), four cosines, unrolled by 4
    "rk4_duffing": [{"THREADS": 64, "ITEMS": 2, "REUSE": 1, "UNROLL": 2, "MIN_BLOCKS": 2},
                    {"THREADS": 32, "ITEMS": 4, "REUSE": 0, "UNROLL": 4, "MIN_BLOCKS": 4}],
    # two matrices a thread over 128 staged, one block short of its 256 at the check shape;
    # one a thread over 64 in place (the last block partly past the 301) with rsqrtf
    "sym3_jacobi": [{"THREADS": 128, "ITEMS": 2, "STAGE": 1, "RSQRT": 0, "MIN_BLOCKS": 4},
                    {"THREADS": 64, "ITEMS": 1, "STAGE": 0, "RSQRT": 1, "MIN_BLOCKS": 2}],
    # 4 rows a thread on a 16 x 4 block (the 19 rows uneven over it), by compare; 8 rows a
    # thread on a 64 x 2 block, by modulo (one block's rows past the end)
    "jacobi9_torus": [{"BX": 16, "BY": 4, "ITEMS_Y": 4, "WRAP": 1},
                      {"BX": 64, "BY": 2, "ITEMS_Y": 8, "WRAP": 0}],
    # 8 elements a thread, 2 rows a block (the last block half past the 5 rows), shuffles,
    # padded, float4; 4 a thread, 4 rows a block, shared stages only, float2
    "wht1024_rows": [{"V": 8, "ROWS": 2, "SHFL": 1, "PAD": 1, "VEC": 4},
                     {"V": 4, "ROWS": 4, "SHFL": 0, "PAD": 0, "VEC": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "syrk_lower"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"jacobi9_torus", "wht1024_rows"}

SET = HeldBackSet(key="unseen11", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
