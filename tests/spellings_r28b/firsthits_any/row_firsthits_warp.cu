// For each row of x: the columns of its first 16 entries above 0.95 (in order, -1 past the
// last) and how many entries are above it in all. A warp a row, 8 warps a block. This hand:
// a while over the row's chunks, a chunk with no hit skipped by __any_sync, the lanes below
// as ~(all << lane), the lane and warp by % and / of warpSize.

#define FULL 0xffffffffu

extern "C" __global__ void row_firsthits_warp(int* hits, int* count, const float* x, int rows,
                                              int cols) {
  const int lane = threadIdx.x % warpSize;
  const int row = blockIdx.x * 8 + threadIdx.x / warpSize;
  const unsigned below = ~(FULL << lane);
  if (row >= rows) return;

  const float* rp = x + (size_t)row * cols;
  int found = 0;
  int base = 0;
  while (base < cols) {
    const int j = base + lane;
    const bool hit = (j < cols) ? (rp[j] > 0.95f) : false;
    if (__any_sync(FULL, hit)) {
      const unsigned votes = __ballot_sync(FULL, hit);
      const int slot = found + __popc(votes & below);
      if (hit && slot < 16) hits[row * 16 + slot] = j;
      found += __popc(votes);
    }
    base += 32;
  }
  if (lane < 16 && lane >= found) hits[row * 16 + lane] = -1;
  if (lane == 0) count[row] = found;
}
