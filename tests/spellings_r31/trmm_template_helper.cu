// B = L A with L lower triangular (n x n, row-major; the strict upper triangle is never
// read) and A, B n x m row-major. Tiled like a GEMM, but a row block only walks the tiles of
// L up to and including its diagonal tile. The body is a tile-size template; the guarded
// tile loads sit in helpers.

__device__ __forceinline__ float lower_at(const float* Lrow, int n, int r, int c) {
  if (r >= n || c > r) return 0.0f;
  return Lrow[c];
}

__device__ __forceinline__ float dense_at(const float* A, int n, int m, int r, int c) {
  return (r < n && c < m) ? A[(size_t)r * m + c] : 0.0f;
}

template <int TILE>
__device__ void trmm_body(float* B, const float* L, const float* A, int n, int m) {
  __shared__ float sL[TILE][TILE];
  __shared__ float sA[TILE][TILE];

  const int lx = threadIdx.x;
  const int ly = threadIdx.y;
  const int r = blockIdx.y * TILE + ly;
  const int c = blockIdx.x * TILE + lx;
  const float* Lrow = L + (size_t)r * n;

  float sum = 0.0f;
  for (int tile = 0; tile <= (int)blockIdx.y; tile++) {
    sL[ly][lx] = lower_at(Lrow, n, r, tile * TILE + lx);
    sA[ly][lx] = dense_at(A, n, m, tile * TILE + ly, c);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; k++) {
      sum += sL[ly][k] * sA[k][lx];
    }
    __syncthreads();
  }
  if (r < n && c < m) {
    B[(size_t)r * m + c] = sum;
  }
}

extern "C" __global__ void trmm_lower_tiled(float* B, const float* L, const float* A, int n,
                                            int m) {
  trmm_body<16>(B, L, A, n, m);
}
