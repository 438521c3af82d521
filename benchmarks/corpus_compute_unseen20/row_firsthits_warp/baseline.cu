// For each row of x (rows x cols, row-major): the column indices of its first MAX_HITS
// entries above THRESHOLD, in column order (-1 past the last one found), and how many
// entries of the row are above THRESHOLD in all.
// One warp per row, WARPS_PER_BLOCK warps per block; each 32-column chunk is voted on by
// the warp and every hit lane writes its slot from the vote's prefix count.
// Launch: grid = ((rows + 7) / 8), block = (256).

#define FULL_MASK 0xffffffffu
#define WARPS_PER_BLOCK 8
#define MAX_HITS 16
#define THRESHOLD 0.95f

extern "C" __global__ void row_firsthits_warp(int* hits, int* count, const float* x, int rows,
                                              int cols) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned lanes_below = (1u << lane) - 1u;
  const int row = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= rows) return;  // the whole warp leaves together

  const float* rp = x + (size_t)row * cols;
  int* out = hits + row * MAX_HITS;
  int found = 0;
  for (int base = 0; base < cols; base += 32) {
    const int j = base + lane;
    const bool hit = j < cols && rp[j] > THRESHOLD;
    const unsigned votes = __ballot_sync(FULL_MASK, hit);
    if (hit) {
      const int slot = found + __popc(votes & lanes_below);
      if (slot < MAX_HITS) out[slot] = j;
    }
    found += __popc(votes);
  }
  if (lane < MAX_HITS && (int)lane >= found) out[lane] = -1;
  if (lane == 0) count[row] = found;
}
