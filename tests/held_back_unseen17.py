"""The seventeenth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, and its memory-bound kernels. Its kernels use no
CUDA built-in beyond the unseen3 host prelude.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["cbrt_newton_f64", "bmm_abt_relu", "erf_series_f64", "corr7x7_bank4",
           "star13_o2", "rowl1_scale_warp"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two elements a thread over 64 threads, steps unrolled by 4 with the reciprocal (24
    # blocks at the check shape, the last partly); four over 128 unrolled by 8, dividing
    "cbrt_newton_f64": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4, "RCP": 1},
                        {"THREADS": 128, "ITEMS": 4, "UNROLL": 8, "RCP": 0}],
    # a 32 x 64 tile of 2 x 4 register tiles over 8-deep padded slices (the 45 of k end
    # mid-slice, the 37 x 29 uneven over the tile); a 64 x 32 tile of 4 x 2 over 32-deep
    # unpadded slices (one block past all three ends)
    "bmm_abt_relu": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 1},
                     {"BM": 64, "BN": 32, "BK": 32, "TM": 4, "TN": 2, "PAD": 0}],
    # two elements a thread over 64 threads, terms unrolled by 4 with the reciprocals (24
    # blocks at the check shape, the last partly); four over 256 unrolled by 8, dividing
    "erf_series_f64": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4, "RCP": 1},
                       {"THREADS": 256, "ITEMS": 4, "UNROLL": 8, "RCP": 0}],
    # a 32 x 4 block of two rows a thread with padded window rows (the 19 rows and 37
    # columns uneven over it); a 16 x 8 block of four rows a thread (one block tall)
    "corr7x7_bank4": [{"BX": 32, "BY": 4, "RY": 2, "PAD": 1},
                      {"BX": 16, "BY": 8, "RY": 4, "PAD": 0}],
    # a 16 x 4 block in four z chunks of 3 (the last of 2) with the register queue (the
    # 37 x 19 uneven over it); a 64 x 2 block in two chunks (6 and 5), loads from memory
    "star13_o2": [{"BX": 16, "BY": 4, "ZSPLIT": 4, "QUEUE": 1},
                  {"BX": 64, "BY": 2, "ZSPLIT": 2, "QUEUE": 0}],
    # 16 lanes a row over two warps with two partial sums (three blocks of four rows);
    # 8 lanes a row over one warp with four (three blocks, the last of three rows)
    "rowl1_scale_warp": [{"WARPS": 2, "LANES": 16, "ACC": 2},
                         {"WARPS": 1, "LANES": 8, "ACC": 4}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "cbrt_newton_f64"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"star13_o2", "rowl1_scale_warp"}

SET = HeldBackSet(key="unseen17", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
