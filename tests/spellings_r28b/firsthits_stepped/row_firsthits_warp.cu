// For each row of x: the columns of its first 16 entries above 0.95 (in order, -1 past the
// last) and how many entries are above it in all. A warp a row, 8 warps a block. This hand:
// the parameters stepped to the warp's row, the count a second vote's popcount, the lane
// prefix by a helper, the work under an if-block, a do-while over the chunks.

static constexpr int kWarps = 8;
static constexpr int kKeep = 16;

__device__ __forceinline__ unsigned prefix_mask(unsigned lane) { return (1u << lane) - 1u; }

extern "C" __global__ void row_firsthits_warp(int* __restrict__ hits, int* __restrict__ count,
                                              const float* __restrict__ x, int rows, int cols) {
  const unsigned lane = threadIdx.x & 31u;
  const int row = (threadIdx.x >> 5) + kWarps * blockIdx.x;
  if (row < rows) {
    x += (size_t)row * cols;
    hits += row * kKeep;
    int total = 0;
    int c0 = 0;
    do {
      const int c = c0 + (int)lane;
      const bool hit = c < cols && x[c] > 0.95f;
      const int rank = total + __popc(__ballot_sync(0xffffffffu, hit) & prefix_mask(lane));
      if (hit && rank < kKeep) hits[rank] = c;
      total += __popc(__ballot_sync(0xffffffffu, hit));
      c0 += 32;
    } while (c0 < cols);
    if ((int)lane < kKeep && (int)lane >= total) hits[lane] = -1;
    if (lane == 0) count[row] = total;
  }
}
