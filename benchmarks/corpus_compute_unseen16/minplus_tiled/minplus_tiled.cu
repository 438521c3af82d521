// Min-plus (tropical) matrix product: d[i][j] = min over k of a[i][k] + b[k][j], a [m, k],
// b [k, n], d [m, n], all row-major. 16 x 16 shared tiles of a and b walk k; one output a
// thread of a 16 x 16 block. Out-of-range tile entries are +inf, which never win the min.
// Launch: grid = ((n + 15) / 16, (m + 15) / 16), block = (16, 16).

#define T 16
#define IDX(r, c, ld) ((size_t)(r) * (ld) + (c))
#define BIG 3.0e38f

extern "C" __global__ void minplus_tiled(float* __restrict__ d, const float* __restrict__ a,
                                         const float* __restrict__ b, int m, int n, int k) {
  __shared__ float as[T][T];
  __shared__ float bs[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty;
  const int col = blockIdx.x * T + tx;
  float best = BIG;
  for (int k0 = 0; k0 < k; k0 += T) {
    as[ty][tx] = (row < m && k0 + tx < k) ? a[IDX(row, k0 + tx, k)] : BIG;
    bs[ty][tx] = (k0 + ty < k && col < n) ? b[IDX(k0 + ty, col, n)] : BIG;
    __syncthreads();
    for (int kk = 0; kk < T; ++kk) best = fminf(best, as[ty][kk] + bs[kk][tx]);
    __syncthreads();
  }
  if (row < m && col < n) d[IDX(row, col, n)] = best;
}
