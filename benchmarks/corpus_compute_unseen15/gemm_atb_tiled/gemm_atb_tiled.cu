// C = A^T * B for A [k, m] and B [k, n] (both row-major, so A is read along m), C [m, n]:
// c[r][q] = sum_t a[t][r] * b[t][q]. Shared 16 x 16 tiles of A and B, padded by one, a
// 16 x 16 block computing one output each; the sizes travel as a struct built on entry.
// Launch: grid = ((n + 15) / 16, (m + 15) / 16), block = (16, 16).

#define TILE 16

struct GemmDims {
  int m, n, k;
  __device__ bool inside(int r, int q) const { return r < m && q < n; }
};

extern "C" __global__ void gemm_atb_tiled(float* c, const float* a, const float* b, int m, int n,
                                          int k) {
  const GemmDims d{m, n, k};
  __shared__ float at[TILE][TILE + 1];  // at[t][r]: a slice of A, k by m
  __shared__ float bt[TILE][TILE + 1];  // bt[t][q]: a slice of B, k by n
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  const int arow = blockIdx.y * TILE + tx;  // the m index this thread loads
  float acc = 0.0f;
  int t0 = 0;
  do {
    const int t = t0 + ty;
    at[ty][tx] = (t < d.k && arow < d.m) ? a[(size_t)t * d.m + arow] : 0.0f;
    bt[ty][tx] = (t < d.k && col < d.n) ? b[(size_t)t * d.n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int s = 0; s < TILE; ++s) acc += at[s][ty] * bt[s][tx];
    __syncthreads();
    t0 += TILE;
  } while (t0 < d.k);
  if (d.inside(row, col)) c[(size_t)row * d.n + col] = acc;
}
