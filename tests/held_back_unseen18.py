"""The eighteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, and its memory-bound kernels. Its kernels use no
CUDA built-in beyond the unseen3 host prelude.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["haversine_nearest", "raysphere_f64"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two points a thread over 128 threads staging 256 of b a round (two rounds, the second
    # partial); four over 64 staging 128 with the arcsine once at the end (300 over 256: two
    # blocks, the second partly)
    "haversine_nearest": [{"THREADS": 128, "ITEMS": 2, "TILE": 256, "HMIN": 0},
                          {"THREADS": 64, "ITEMS": 4, "TILE": 128, "HMIN": 1}],
    # two rays a thread over 256 threads with the spheres staged, unrolled by 4 (1000 rays
    # over 512: two blocks, the second partly); four over 64 from global, unrolled by 2
    "raysphere_f64": [{"THREADS": 256, "ITEMS": 2, "SMEM": 1, "UNROLL": 4},
                      {"THREADS": 64, "ITEMS": 4, "SMEM": 0, "UNROLL": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "haversine_nearest"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND: set[str] = set()

SET = HeldBackSet(key="unseen18", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
