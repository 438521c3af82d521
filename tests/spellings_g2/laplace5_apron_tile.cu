// A 5-point Laplacian through a shared 18 x 18 apron tile of a padded (h + 2) x (w + 2) grid,
// 16 x 16 outputs a block; no bounds test on the loads or the store.
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  __shared__ float tile[18][18];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int x = blockIdx.x * 16 + tx, y = blockIdx.y * 16 + ty;
  const int p = w + 2;
  for (int j = ty; j < 18; j += 16)
    for (int i = tx; i < 18; i += 16)
      tile[j][i] = in[(blockIdx.y * 16 + j) * p + blockIdx.x * 16 + i];
  __syncthreads();
  out[y * w + x] = tile[ty][tx + 1] + tile[ty + 2][tx + 1] + tile[ty + 1][tx] + tile[ty + 1][tx + 2] - 4.0f * tile[ty + 1][tx + 1];
}
