"""The twenty-first held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude, and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["pearson_cm_tiled", "gmm_loglik_k16", "sobel_magdir_tile", "cummax_rows_cg",
           "upconv4x4_s2", "quintic_newton_f64"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # a 32 x 64 tile of 2 x 4 a thread over slices of 8, padded (45 columns over two i tiles
    # and one j tile, each partly; 37 samples = four slices and a partial one); 64 x 16 of
    # 4 x 2 over slices of 32, unpadded (one partial slice)
    "pearson_cm_tiled": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 1},
                         {"BM": 64, "BN": 16, "BK": 32, "TM": 4, "TN": 2, "PAD": 0}],
    # three points a thread over 64 with the terms cached (1000 over 192: six blocks, the
    # last partly); two over 512 recomputed, intrinsic exp and log (one block, partly)
    "gmm_loglik_k16": [{"THREADS": 64, "ITEMS": 3, "CACHE": 1, "FAST": 0},
                       {"THREADS": 512, "ITEMS": 2, "CACHE": 0, "FAST": 1}],
    # 32 x 2 blocks of four rows a thread, staged and padded (45 columns over two blocks,
    # 37 rows over five, the last partly); 16 x 4 of two rows from global memory
    "sobel_magdir_tile": [{"BX": 32, "BY": 2, "RY": 4, "SMEM": 1, "PAD": 1},
                          {"BX": 16, "BY": 4, "RY": 2, "SMEM": 0, "PAD": 0}],
    # two warps of two rows, float4 chunks (100 columns: a full chunk of 128 partly; 37 rows
    # over ten blocks, the last warp's second row past the end); four warps of four rows,
    # one column a lane (three full chunks and a partial one)
    "cummax_rows_cg": [{"WARPS": 2, "ROWS": 2, "VEC": 4},
                       {"WARPS": 4, "ROWS": 4, "VEC": 1}],
    # 32 x 2 blocks of four output channels a thread, unrolled by 2 (18 columns over one
    # block partly, 14 rows over seven; 5 channels over two layers, the last partly); 8 x 4
    # of sixteen channels, unrolled by 4 (3 input channels: no full unrolled round)
    "upconv4x4_s2": [{"BX": 32, "BY": 2, "KO": 4, "UNROLL": 2},
                     {"BX": 8, "BY": 4, "KO": 16, "UNROLL": 4}],
    # three values a thread over 64 in one loop, two steps a test (1000 over 192: six
    # blocks, the last partly); two over 256 one after the other, three steps a test
    "quintic_newton_f64": [{"THREADS": 64, "ITEMS": 3, "LOCKSTEP": 1, "STEPS": 2},
                           {"THREADS": 256, "ITEMS": 2, "LOCKSTEP": 0, "STEPS": 3}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "quintic_newton_f64"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"sobel_magdir_tile", "cummax_rows_cg"}

#: Host forms of the CUDA built-ins the kernels use beyond the unseen3 prelude: the fast
#: exponential and logarithm (macros: glibc declares the names), and the cooperative
#: groups' block and 32-lane tile (its shuffles through the prelude's lane exchange).
HOST_EXTRAS = r"""
#define __expf(v) std::exp(float(v))
#define __logf(v) std::log(float(v))
namespace cooperative_groups {
struct thread_block {
  static void sync() { __syncthreads(); }
  static unsigned thread_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
};
static inline thread_block this_thread_block() { return {}; }
template <unsigned Size> struct thread_block_tile {
  static_assert(Size == 32, "the host form has warp-sized tiles only");
  unsigned thread_rank() const { return wb_lane(); }
  unsigned meta_group_rank() const { return thread_block::thread_rank() / Size; }
  template <class T> T shfl_up(T v, unsigned delta) const {
    const unsigned lane = wb_lane();
    return wb_exchange(v, lane - delta, lane < delta);
  }
  template <class T> T shfl(T v, int src) const { return wb_exchange(v, unsigned(src), false); }
};
template <unsigned Size> static thread_block_tile<Size> tiled_partition(const thread_block&) {
  return {};
}
}  // namespace cooperative_groups
"""
_CG_HEADER = "#include <cooperative_groups.h>"

SET = HeldBackSet(key="unseen21", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _CG_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
