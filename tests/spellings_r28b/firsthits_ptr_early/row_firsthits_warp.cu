// For each row of x: the columns of its first 16 entries above 0.95 (in order, -1 past the
// last) and how many entries are above it in all. A warp a row, 8 warps a block. This hand:
// an early return, all three parameters stepped to the row by assignment (`x = x + ..`,
// `count += row`), a for over the chunks, the count stored through the stepped pointer.

extern "C" __global__ void row_firsthits_warp(int* hits, int* count, const float* x, int rows,
                                              int cols) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * 8 + threadIdx.x / 32;
  if (row >= rows) return;
  x = x + static_cast<size_t>(row) * cols;
  hits = hits + row * 16;
  count += row;
  int found = 0;
  for (int base = 0; base < cols; base += 32) {
    const int j = base + lane;
    const bool hit = j < cols && x[j] > 0.95f;
    const unsigned votes = __ballot_sync(0xffffffffu, hit);
    const int slot = found + __popc(votes & ((1u << lane) - 1u));
    if (hit && slot < 16) hits[slot] = j;
    found += __popc(votes);
  }
  if (lane < 16 && lane >= found) hits[lane] = -1;
  if (lane == 0) count[0] = found;
}
