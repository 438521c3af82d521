"""The nineteenth held-back compute corpus (issue 28): its kernels, the hand-picked configs
its experts are checked at on the host, the CUDA built-ins its kernels use beyond the
unseen3 host prelude (a block of cooperative groups), and its memory-bound kernels.
tests/test_held_back_host.py runs the host checks of every set (tests/held_back_harness.py),
tests/test_held_back_folders.py the folder checks."""

from __future__ import annotations

from held_back_harness import HeldBackSet, prepended

KERNELS = ["lorenz_rk2_f64", "coulomb_pot_tiles", "gemm_cm_bt_rowscale", "fourier_synth_f64",
           "conv5x5_rgb_luma", "aniso9_diffuse_cg"]
#: Hand-picked configs the all-ends corners do not reach (each over the default): knob mixes
#: whose index arithmetic differs from both ends; the last of each kernel's is checked on the
#: host on every run.
EXTRA_CONFIGS: dict[str, list[dict[str, int]]] = {
    # two trajectories a thread over 128 threads, staged, unrolled by 4 (1000 over 256: four
    # blocks, the last partly); four over 64 from global, unrolled by 8
    "lorenz_rk2_f64": [{"THREADS": 128, "ITEMS": 2, "UNROLL": 4, "STAGE": 1},
                       {"THREADS": 64, "ITEMS": 4, "UNROLL": 8, "STAGE": 0}],
    # two probes a thread over 64 threads staging 128 charges a round, unrolled by 4 (200
    # charges: a full round and a partial one with a remainder); four over 128 staging 256
    # (one partial round), unrolled by 4
    "coulomb_pot_tiles": [{"THREADS": 64, "ITEMS": 2, "TILE": 128, "UNROLL": 4},
                          {"THREADS": 128, "ITEMS": 4, "TILE": 256, "UNROLL": 4}],
    # a 32 x 64 tile of 2 x 4 a thread over slices of 8, padded (70 rows over three tiles,
    # the last partly; 37 = four slices and a partial one); 64 x 16 of 4 x 2 over slices of
    # 32 (one partial slice)
    "gemm_cm_bt_rowscale": [{"BM": 32, "BN": 64, "BK": 8, "TM": 2, "TN": 4, "PAD": 1},
                            {"BM": 64, "BN": 16, "BK": 32, "TM": 4, "TN": 2, "PAD": 0}],
    # two samples a thread over 128 threads with the coefficients staged, unrolled by 4
    # (1000 over 256: four blocks, the last partly); four over 64 from global, unrolled by 2
    "fourier_synth_f64": [{"THREADS": 128, "ITEMS": 2, "SMEM": 1, "UNROLL": 4},
                          {"THREADS": 64, "ITEMS": 4, "SMEM": 0, "UNROLL": 2}],
    # a 16 x 4 block of two rows a thread, padded (45 columns over three blocks, 37 rows over
    # five, the last partly); 64 x 2 with four rows a thread (one block of columns, partly)
    "conv5x5_rgb_luma": [{"BX": 16, "BY": 4, "RY": 2, "PAD": 1},
                         {"BX": 64, "BY": 2, "RY": 4, "PAD": 0}],
    # a 16 x 16 block of two rows a thread, padded (45 columns over three blocks, 37 rows
    # over two, the second partly); 64 x 4 with four rows a thread (one block of columns and
    # two of rows, each partly)
    "aniso9_diffuse_cg": [{"BX": 16, "BY": 16, "RY": 2, "PAD": 1},
                          {"BX": 64, "BY": 4, "RY": 4, "PAD": 0}],
}
#: The kernel whose default and last all-ends config are checked on every run too.
CORNERS_EVERY_RUN = "lorenz_rk2_f64"

#: The kernels bounded by DRAM bandwidth (stage1_corpus reports them as % of a copy too).
MEMORY_BOUND = {"conv5x5_rgb_luma", "aniso9_diffuse_cg"}

#: Host forms of the cooperative-groups block the plain aniso9_diffuse_cg names (its
#: indices, rank, size and barrier), standing for the device header.
HOST_EXTRAS = r"""
namespace cooperative_groups {
struct thread_block {
  static void sync() { __syncthreads(); }
  static wb_dim3 group_index() { return blockIdx; }
  static wb_dim3 thread_index() { return threadIdx; }
  static unsigned thread_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  static unsigned num_threads() { return blockDim.x * blockDim.y * blockDim.z; }
};
static inline thread_block this_thread_block() { return {}; }
}  // namespace cooperative_groups
"""
_CG_HEADER = "#include <cooperative_groups.h>"

SET = HeldBackSet(key="unseen19", kernels=tuple(KERNELS), extra_configs=EXTRA_CONFIGS,
                  corners_every_run=CORNERS_EVERY_RUN, memory_bound=frozenset(MEMORY_BOUND),
                  host_source=prepended(HOST_EXTRAS, _CG_HEADER))
ROOT, host_source = SET.root, SET.host_source
checked_configs, _folder = SET.checked_configs, SET.folder
