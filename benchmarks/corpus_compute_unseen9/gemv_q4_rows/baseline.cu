// Matrix-vector product with 4-bit weights, the decode step of a weight-only quantised
// language-model layer: y[r] = sum_c W[r][c] x[c] with W[r][c] = (code - 8) * scale, the
// codes packed eight to a 32-bit word (column c in bits 4 (c % 8) .. of word c / 8 of its
// row) and one float scale per group of 32 columns of a row; cols is a multiple of 32.
// A warp per row: lane l takes words l, l + 32, ...; the warp adds with shuffles (down)
// and lane 0 writes. Eight rows a block, one per threadIdx.y.
// Launch: grid = (rows + 7) / 8, block = (32, 8).
template <int GROUP>
__device__ float dot_q4_row(const unsigned int* wrow, const float* srow, const float* x,
                            int words, int lane) {
  float acc = 0.0f;
  for (int w = lane; w < words; w += 32) {
    const unsigned int q = wrow[w];
    const float s = srow[w * 8 / GROUP];
    const float* xw = x + w * 8;
    for (int j = 0; j < 8; j++) acc += s * ((float)((q >> (4 * j)) & 0xFu) - 8.0f) * xw[j];
  }
  return acc;
}

extern "C" __global__ void gemv_q4_rows(float* y, const unsigned int* wq, const float* scales,
                                        const float* x, int rows, int cols) {
  const int lane = threadIdx.x;
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows) return;  // a whole warp: the shuffles below see every lane of it
  const int words = cols / 8;
  float acc = dot_q4_row<32>(wq + (size_t)row * words, scales + (size_t)row * (cols / 32), x,
                             words, lane);
  for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
  if (lane == 0) y[row] = acc;
}
