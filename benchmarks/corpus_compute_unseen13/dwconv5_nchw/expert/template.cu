// out[b, c] = each channel of in correlated with its own 5 x 5 filter, zero padding 2 (NCHW).
// Expert parameterization (hand-written): a BX x BY block owns a BX x (BY * RY) patch of
// one plane (blockIdx.z); each thread computes RY outputs down a column (rows ty + r * BY).
// The plane's 25 taps are read into registers once. SMEM 1 stages the patch with its
// two-pixel halo in shared memory (zeros outside the image, rows padded by one float)
// before the taps read it; SMEM 0 reads the taps from global with the bounds tests. Each
// sum adds its taps row by row, as the kernel as written does.
// Launch: grid = (ceil(w / BX), ceil(h / (BY * RY)), nb * ch), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 block, one output a thread, taps from global).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef RY
#define RY 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#define ROWS (BY * RY)

extern "C" __global__ void __launch_bounds__(BX * BY)
dwconv5_nchw(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ wt,
             int ch, int h, int w) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * BX + tx, y0 = blockIdx.y * ROWS;
  const int plane = blockIdx.z;
  const float* src = in + (size_t)plane * h * w;
  float k[25];
#pragma unroll
  for (int t = 0; t < 25; ++t) k[t] = wt[(plane % ch) * 25 + t];
#if SMEM
  __shared__ float tile[ROWS + 4][BX + 5];
  for (int e = ty * BX + tx; e < (ROWS + 4) * (BX + 4); e += BX * BY) {
    const int r = e / (BX + 4), c = e % (BX + 4);
    const int yy = y0 + r - 2, xx = blockIdx.x * BX + c - 2;
    tile[r][c] = (yy >= 0 && yy < h && xx >= 0 && xx < w) ? src[(size_t)yy * w + xx] : 0.0f;
  }
  __syncthreads();
#endif
#pragma unroll
  for (int r = 0; r < RY; ++r) {
    const int y = y0 + ty + r * BY;
    float acc = 0.0f;
#pragma unroll
    for (int dy = 0; dy < 5; ++dy) {
#pragma unroll
      for (int dx = 0; dx < 5; ++dx) {
#if SMEM
        acc += k[dy * 5 + dx] * tile[ty + r * BY + dy][tx + dx];
#else
        const int yy = y + dy - 2, xx = x + dx - 2;
        if (yy >= 0 && yy < h && xx >= 0 && xx < w) acc += k[dy * 5 + dx] * src[(size_t)yy * w + xx];
#endif
      }
    }
    if (x < w && y < h) out[(size_t)plane * h * w + (size_t)y * w + x] = acc;
  }
}
