// LayerNorm backward's per-column partial sums over blocks of ROWS_PER_BLOCK rows:
//   dgamma_part[g][c] = sum over rows r of block g of dy[r][c] * xhat[r][c],
//   dbeta_part[g][c]  = sum over rows r of block g of dy[r][c],
// for dy, xhat [rows, cols] row-major (a second pass adds the partials up). One column a
// thread walking its rows with a pointer; 256 columns a block, one row block per grid row.
// Launch: grid = ((cols + 255) / 256, (rows + 63) / 64), block = (256).

#define ROWS_PER_BLOCK 64

extern "C" __global__ void lnbwd_colpartials(float* dgamma_part, float* dbeta_part,
                                             const float* dy, const float* xhat, int rows,
                                             int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const size_t r0 = (size_t)blockIdx.y * ROWS_PER_BLOCK;
  size_t r1 = r0 + ROWS_PER_BLOCK;
  if (r1 > (size_t)rows) r1 = rows;
  const float* g = dy + r0 * cols + c;
  const float* x = xhat + r0 * cols + c;
  const float* const end = dy + r1 * cols + c;
  float sg = 0.0f, sb = 0.0f;
  while (g < end) {
    const float v = *g;
    sg += v * *x;
    sb += v;
    g += cols;
    x += cols;
  }
  const size_t o = (size_t)blockIdx.y * cols + c;
  dgamma_part[o] = sg;
  dbeta_part[o] = sb;
}
