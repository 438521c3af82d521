// For each row of x: the columns of its first 16 entries above 0.95 (in order, -1 past the
// last one found) and the row's count of entries above 0.95. Cooperative groups: a tile of
// 32 a row votes through the tile's ballot; a while over the row's chunks.
// Launch: grid = ((rows + 7) / 8), block = (256).

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define WARPS 8
#define MAX_HITS 16
#define THRESHOLD 0.95f

extern "C" __global__ void row_firsthits_warp(int* hits, int* count, const float* x, int rows,
                                              int cols) {
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
  const int row = blockIdx.x * WARPS + tile.meta_group_rank();
  if (row >= rows) return;
  const unsigned lane = tile.thread_rank();
  const float* src = x + (size_t)row * cols;
  int found = 0;
  int base = 0;
  while (base < cols) {
    const int col = base + lane;
    const bool hit = col < cols && src[col] > THRESHOLD;
    const unsigned votes = tile.ballot(hit);
    if (hit) {
      const int slot = found + __popc(votes & ((1u << lane) - 1u));
      if (slot < MAX_HITS) hits[row * MAX_HITS + slot] = col;
    }
    found += __popc(votes);
    base += 32;
  }
  if (lane < MAX_HITS && (int)lane >= found) hits[row * MAX_HITS + lane] = -1;
  if (tile.thread_rank() == 0) count[row] = found;
}
