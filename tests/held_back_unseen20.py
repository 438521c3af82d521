"""The twentieth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["gram_ata_ridge", "conv3x3_s2_sat", "acklam_probit_f64", "crspline_rotmean",
           "row_firsthits_warp", "verlet_orbit_tpl"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a 32 x 64 tile of 2 x 4 a thread over slices of 8, padded (45 features over two row
    # tiles and one column tile, each partly; 37 samples = four slices and a partial one);
    # 64 x 16 of 4 x 2 over slices of 32 (one partial slice)
    "gram_ata_ridge": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 1},
                       {"BM": 64, "BN": 16, "BK": 32, "TM": 4, "TN": 2, "PAD": 0}],
    # a 16 x 4 block of two rows a thread from global (22 output columns over two blocks, 18
    # rows over three, the last partly); 32 x 2 of four rows a thread staged and padded
    "conv3x3_s2_sat": [{"BX": 16, "BY": 4, "RY": 2, "SMEM": 0, "PAD": 0},
                       {"BX": 32, "BY": 2, "RY": 4, "SMEM": 1, "PAD": 1}],
    # three values a thread over 64 threads, steps side by side (1000 over 192: six blocks,
    # the last partly); four over 256 one after the other (one block, partly)
    "acklam_probit_f64": [{"THREADS": 64, "ITEMS": 3, "HOIST": 1},
                          {"THREADS": 256, "ITEMS": 4, "HOIST": 0}],
    # four values a thread over 64, two side by side, unrolled by 4 (1000 over 256: four
    # blocks, the last partly); sixteen over 128, four side by side (one block, two rounds)
    "crspline_rotmean": [{"THREADS": 64, "SPAN": 4, "ITEMS": 2, "UNROLL": 4},
                         {"THREADS": 128, "SPAN": 16, "ITEMS": 4, "UNROLL": 1}],
    # one warp of two rows loading two chunks ahead (100 columns: a full pair and a partial
    # one; 37 rows over 19 blocks, the last warp's second row past the end); 16 warps of
    # four rows, eight chunks ahead (one partial round, a block mostly past the rows)
    "row_firsthits_warp": [{"WARPS": 1, "ROWS": 2, "UNROLL": 2},
                           {"WARPS": 16, "ROWS": 4, "UNROLL": 8}],
    # two particles a thread over 64, unrolled by 8, float4 states (1000 over 128: eight
    # blocks, the last partly); four over 256 by rsqrtf, unrolled by 2 (one block, partly)
    "verlet_orbit_tpl": [{"THREADS": 64, "ITEMS": 2, "UNROLL": 8, "VEC": 1, "RSQRT": 0},
                         {"THREADS": 256, "ITEMS": 4, "UNROLL": 2, "VEC": 0, "RSQRT": 1}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "verlet_orbit_tpl"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"conv3x3_s2_sat", "row_firsthits_warp"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: int2,
#: __saturatef, the bit count and the warp vote (through the prelude's lane slots: each lane
#: of a warp writes, switches, reads its warp's 32 slots, switches).
HOST_EXTRAS = r"""
struct int2 { int x, y; };
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline float __saturatef(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static unsigned __ballot_sync(unsigned, int predicate) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  wb_lane_slot[t] = predicate != 0;
  wb_yield();
  unsigned votes = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if (wb_lane_slot[t - t % 32 + lane]) votes |= 1u << lane;
  wb_yield();
  return votes;
}
"""

SET = HeldBackSet(key="unseen20", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
