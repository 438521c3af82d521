// 5 x 5 Gaussian blur of a single-channel float image: weights (1 4 6 4 1)^T (1 4 6 4 1)
// / 256, pixels outside the image read as zero. The image is ny rows of nx floats. Each
// TILE_W x TILE_H block stages its tile and an apron of R pixels in shared memory with
// one flat loop over the (TILE_H + 2R) x (TILE_W + 2R) patch.
// Launch: grid = ((nx + TILE_W - 1) / TILE_W, (ny + TILE_H - 1) / TILE_H),
//         block = (TILE_W, TILE_H) = (32, 8).
#ifndef TILE_W
#define TILE_W 32
#endif
#ifndef TILE_H
#define TILE_H 8
#endif
#define R 2

extern "C" __global__ void gauss5(const float* img, float* blurred, int nx, int ny) {
  __shared__ float tile[TILE_H + 2 * R][TILE_W + 2 * R];
  const int x0 = blockIdx.x * TILE_W - R;
  const int y0 = blockIdx.y * TILE_H - R;
  const int t = threadIdx.y * TILE_W + threadIdx.x;
  for (int idx = t; idx < (TILE_H + 2 * R) * (TILE_W + 2 * R); idx += TILE_W * TILE_H) {
    const int ly = idx / (TILE_W + 2 * R), lx = idx % (TILE_W + 2 * R);
    const int gx = x0 + lx, gy = y0 + ly;
    tile[ly][lx] = (gx >= 0 && gx < nx && gy >= 0 && gy < ny) ? img[gy * nx + gx] : 0.0f;
  }
  __syncthreads();

  const int x = blockIdx.x * TILE_W + threadIdx.x;
  const int y = blockIdx.y * TILE_H + threadIdx.y;
  if (x < nx && y < ny) {
    const float w[2 * R + 1] = {1.0f, 4.0f, 6.0f, 4.0f, 1.0f};
    float acc = 0.0f;
    for (int j = 0; j <= 2 * R; j++)
      for (int i = 0; i <= 2 * R; i++)
        acc += w[j] * w[i] * tile[threadIdx.y + j][threadIdx.x + i];
    blurred[y * nx + x] = acc * (1.0f / 256.0f);
  }
}
