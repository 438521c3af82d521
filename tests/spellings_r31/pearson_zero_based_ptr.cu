// Pearson correlation matrix of the p columns of X (n samples x p variables, stored
// column-major: column c at x + c * n). mu and sc hold each column's mean and
// 1 / sqrt(sum of squared deviations). R = p x p, column-major.
// Each 16 x 16 block computes a 16 x 16 tile of R, walking k in 16-deep shared slices.

constexpr int kTile = 16;

extern "C" __global__ void pearson_cm_tiled(float* r, const float* x, const float* mu,
                                            const float* sc, int n, int p) {
  __shared__ float a[kTile][kTile + 1];
  __shared__ float b[kTile][kTile + 1];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.x * kTile + tx;  // the output's row: column `row` of X
  const int col = blockIdx.y * kTile + ty;  // the output's column
  const int ca = blockIdx.x * kTile + ty;   // the column of X this thread stages into a
  const int cb = blockIdx.y * kTile + ty;   // and into b

  const float* xa = x + (long)ca * n;  // the columns this thread stages
  const float* xb = x + (long)cb * n;

  float dot = 0.0f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    const int k = k0 + tx;
    a[tx][ty] = (k < n && ca < p) ? xa[k] - mu[ca] : 0.0f;
    b[tx][ty] = (k < n && cb < p) ? xb[k] - mu[cb] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) {
      dot += a[kk][tx] * b[kk][ty];
    }
    __syncthreads();
  }
  if (row < p && col < p) {
    r[(long)col * p + row] = dot * sc[row] * sc[col];
  }
}
