// Running maximum along each row of a rows x cols row-major matrix: out[r][c] =
// max(in[r][0..c]). Cooperative groups with the chunk's scan in a helper taking the tile by
// reference, constexpr warps a block, size_t offsets, a while over the chunks.
// Launch: grid = ((rows + 7) / 8), block = (256).

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int kWarps = 8;

__device__ float inclusive_max(const cg::thread_block_tile<32>& tile, float v) {
  for (int offset = 1; offset < 32; offset <<= 1) {
    const float other = tile.shfl_up(v, offset);
    if (tile.thread_rank() >= offset) v = fmaxf(v, other);
  }
  return v;
}

extern "C" __global__ void cummax_rows_cg(float* out, const float* in, int rows, int cols) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const size_t row = (size_t)blockIdx.x * kWarps + tile.meta_group_rank();
  if (row >= (size_t)rows) return;
  const float* src = in + row * cols;
  float* dst = out + row * cols;
  float running = -INFINITY;
  int base = 0;
  while (base < cols) {
    const int c = base + (int)tile.thread_rank();
    const float v = fmaxf(inclusive_max(tile, c < cols ? src[c] : -INFINITY), running);
    if (c < cols) dst[c] = v;
    running = tile.shfl(v, 31);
    base += 32;
  }
}
