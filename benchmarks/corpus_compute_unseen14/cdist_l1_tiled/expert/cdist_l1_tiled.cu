// Pairwise L1 (Manhattan) distances: dist[i][j] = sum_k |x[i][k] - y[j][k]| for the rows of
// x [m, d] and y [n, d]. The classic shared-memory tiling of a matrix product, instantiated
// for 16 x 16 tiles: each block stages a 16-row piece of x and of y per 16-wide slice of k
// (padded by one column) and each thread accumulates one distance.
// Launch: grid = ((n + 15) / 16, (m + 15) / 16), block = (16, 16).

template <int TILE>
__device__ void l1_tile(float* dist, const float* x, const float* y, int m, int n, int d) {
  __shared__ float xs[TILE][TILE + 1];
  __shared__ float ys[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;  // row of x, row of dist
  const int col = blockIdx.x * TILE + tx;  // row of y, column of dist
  const int yrow = blockIdx.x * TILE + ty;
  float acc = 0.0f;
  for (int k0 = 0; k0 < d; k0 += TILE) {
    xs[ty][tx] = (row < m && k0 + tx < d) ? x[(size_t)row * d + k0 + tx] : 0.0f;
    ys[ty][tx] = (yrow < n && k0 + tx < d) ? y[(size_t)yrow * d + k0 + tx] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += fabsf(xs[ty][k] - ys[tx][k]);
    __syncthreads();
  }
  if (row < m && col < n) dist[(size_t)row * n + col] = acc;
}

extern "C" __global__ void cdist_l1_tiled(float* dist, const float* x, const float* y, int m,
                                          int n, int d) {
  l1_tile<16>(dist, x, y, m, n, d);
}
