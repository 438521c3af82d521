// gauss5: 5 x 5 binomial Gaussian blur, zero outside the image (ny rows of nx floats).
// Expert parameterization (hand-written): a TILE_W x TILE_H block computes
// TILE_W x (TILE_H * ROWS) outputs (each thread ROWS of them, TILE_H rows apart) from one
// staged patch with an apron of R = 2; SEPARABLE 1 first sums each patch row horizontally
// (1 4 6 4 1) into shared memory, then each output sums five of those vertically.
// Launch: grid = (ceil(nx / TILE_W), ceil(ny / (TILE_H * ROWS))), block = (TILE_W, TILE_H).
// Defaults: the kernel as written.
#ifndef TILE_W
#define TILE_W 32
#endif
#ifndef TILE_H
#define TILE_H 8
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef SEPARABLE
#define SEPARABLE 0
#endif
#define R 2
#define OUT_H (TILE_H * ROWS)
#define PATCH_H (OUT_H + 2 * R)
#define PATCH_W (TILE_W + 2 * R)

extern "C" __global__ void __launch_bounds__(TILE_W * TILE_H)
gauss5(const float* __restrict__ img, float* __restrict__ blurred, int nx, int ny) {
  __shared__ float tile[PATCH_H][PATCH_W];
#if SEPARABLE
  __shared__ float rowsum[PATCH_H][TILE_W];
#endif
  const int x0 = blockIdx.x * TILE_W - R;
  const int y0 = blockIdx.y * OUT_H - R;
  const int t = threadIdx.y * TILE_W + threadIdx.x;
  for (int idx = t; idx < PATCH_H * PATCH_W; idx += TILE_W * TILE_H) {
    const int ly = idx / PATCH_W, lx = idx % PATCH_W;
    const int gx = x0 + lx, gy = y0 + ly;
    tile[ly][lx] = (gx >= 0 && gx < nx && gy >= 0 && gy < ny) ? img[gy * nx + gx] : 0.0f;
  }
  __syncthreads();
  const float w[2 * R + 1] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f};
  const int x = blockIdx.x * TILE_W + threadIdx.x;

#if SEPARABLE
  for (int ly = threadIdx.y; ly < PATCH_H; ly += TILE_H) {
    float h = 0.0f;
#pragma unroll
    for (int i = 0; i <= 2 * R; i++) h += w[i] * tile[ly][threadIdx.x + i];
    rowsum[ly][threadIdx.x] = h;
  }
  __syncthreads();
#endif

#pragma unroll
  for (int rr = 0; rr < ROWS; ++rr) {
    const int ly = threadIdx.y + rr * TILE_H;
    const int y = blockIdx.y * OUT_H + ly;
    if (x < nx && y < ny) {
      float acc = 0.0f;
#if SEPARABLE
#pragma unroll
      for (int j = 0; j <= 2 * R; j++) acc += w[j] * rowsum[ly + j][threadIdx.x];
#else
#pragma unroll
      for (int j = 0; j <= 2 * R; j++)
#pragma unroll
        for (int i = 0; i <= 2 * R; i++) acc += w[j] * w[i] * tile[ly + j][threadIdx.x + i];
#endif
      blurred[y * nx + x] = acc * (1.0f / 256.0f);
    }
  }
}
