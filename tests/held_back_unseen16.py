"""The sixteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs its
experts are checked at on the host, and its memory-bound kernels. Its kernels use no CUDA
built-in beyond the unseen3 host prelude.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["hash_mix_rounds"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two keys a thread over 64 threads, rounds unrolled by 4 (24 blocks at the check shape,
    # the last holding 57 keys); eight over 128 unrolled by 2 (three blocks, the last partly)
    "hash_mix_rounds": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 4},
                        {"THREADS": 128, "ITEMS": 8, "UNROLL": 2}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "hash_mix_rounds"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND: set[str] = set()

SET = HeldBackSet(key="unseen16", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(""))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
