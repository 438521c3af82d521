// 8 x 8 blockwise orthonormal 2-D DCT-II through shared tiles.
// Expert parameterization (hand-written): a CTA covers TX x TY image blocks (more threads
// and fewer barriers a block than one 8 x 8 block), each thread computing RPT rows of
// coefficients strided by the block's height, and PAD floats of padding a shared row.
// Launch: grid = (ceil(W / (8 TX)), ceil(H / (8 TY))), block = (8 TX, 8 TY / RPT).
// Defaults: the kernel as written.

#ifndef TX
#define TX 1
#endif
#ifndef TY
#define TY 1
#endif
#ifndef RPT
#define RPT 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define TW (8 * TX)
#define TH (8 * TY)
#define BH (TH / RPT)

extern "C" __global__ void __launch_bounds__(TW * BH) dct8x8_blocks(
    float* __restrict__ out, const float* __restrict__ in, int H, int W) {
  __shared__ float ctab[8][8];
  __shared__ float pix[TH][TW + PAD];
  __shared__ float rows[TH][TW + PAD];
  const int lx = threadIdx.x, x = blockIdx.x * TW + lx, y0 = blockIdx.y * TH;
  const int tid = threadIdx.y * TW + lx;
  if (tid < 64) {
    const int u = tid / 8, k = tid % 8;
    ctab[u][k] = (u == 0 ? 0.35355339f : 0.5f) * cosf((2 * k + 1) * u * 3.14159265f / 16);
  }
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int ly = threadIdx.y + j * BH, y = y0 + ly;
    pix[ly][lx] = (x < W && y < H) ? in[(size_t)y * W + x] : 0.0f;
  }
  __syncthreads();
  const int bx = lx & ~7, v = lx & 7;
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int ly = threadIdx.y + j * BH;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += pix[ly][bx + k] * ctab[v][k];
    rows[ly][lx] = s;
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int ly = threadIdx.y + j * BH, y = y0 + ly;
    const int by = ly & ~7, u = ly & 7;
    float t = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) t += ctab[u][k] * rows[by + k][lx];
    if (x < W && y < H) out[(size_t)y * W + x] = t;
  }
}
