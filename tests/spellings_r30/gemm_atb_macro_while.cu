// C = A^T * B (A [k, m], B [k, n], C [m, n], row-major), another hand: #ifndef tile,
// index macros, a while over the k slices, unsigned thread indices.
#ifndef TS
#define TS 16
#endif
#define A_AT(t, r) a[(size_t)(t) * m + (r)]
#define B_AT(t, q) b[(size_t)(t) * n + (q)]

extern "C" __global__ void gemm_atb_tiled(float* c, const float* a, const float* b, int m, int n,
                                          int k) {
  __shared__ float at[TS][TS + 1];
  __shared__ float bt[TS][TS + 1];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TS + ty;
  const int col = blockIdx.x * TS + tx;
  const int arow = blockIdx.y * TS + tx;
  float acc = 0.0f;
  int t0 = 0;
  while (t0 < k) {
    const int t = t0 + ty;
    at[ty][tx] = (t < k && arow < m) ? A_AT(t, arow) : 0.0f;
    bt[ty][tx] = (t < k && col < n) ? B_AT(t, col) : 0.0f;
    __syncthreads();
    for (int s = 0; s < TS; ++s) acc += at[s][ty] * bt[s][tx];
    __syncthreads();
    t0 += TS;
  }
  if (row >= m || col >= n) return;
  c[(size_t)row * n + col] = acc;
}
