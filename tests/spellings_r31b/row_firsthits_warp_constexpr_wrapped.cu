// For each row of x: the columns of its first 16 entries above 0.95 (in order, -1 past the
// last one found) and the row's count of entries above 0.95. A warp a row; constexpr
// constants, lane and warp by % and /, chunks stepped by warpSize, the lanes below in a
// helper, the work inside the row test.
// Launch: grid = ((rows + 7) / 8), block = (256).

constexpr int kWarps = 8;
constexpr int kMaxHits = 16;
constexpr float kThreshold = 0.95f;

__device__ __forceinline__ unsigned below_mask(unsigned lane) { return (1u << lane) - 1u; }

extern "C" __global__ void row_firsthits_warp(int* hits, int* count, const float* x, int rows,
                                              int cols) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  if (row < rows) {
    const float* rp = x + (size_t)row * cols;
    int* out = &hits[row * kMaxHits];
    int found = 0;
    for (int base = 0; base < cols; base += warpSize) {
      const int j = base + lane;
      const bool hit = j < cols && rp[j] > kThreshold;
      const unsigned votes = __ballot_sync(0xffffffffu, hit);
      const int slot = found + __popc(votes & below_mask(lane));
      if (hit && slot < kMaxHits) out[slot] = j;
      found += __popc(votes);
    }
    if (lane < kMaxHits && lane >= found) out[lane] = -1;
    if (lane == 0) count[row] = found;
  }
}
