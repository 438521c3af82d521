// C [m, n] = A^T B for A [k, m] and B [k, n], all row-major fp32:
// C[i][j] = sum over p of A[p][i] * B[p][j] (a weight gradient's shape: A is stored k-major).
// A block of 256 threads (one-dimensional, read as 16 x 16) owns a 16 x 16 tile of C; each
// step stages a 16 x 16 slice of A (rows p, columns i: A's own layout, so the loads are
// coalesced) and of B in shared memory, zero-filled past the matrix edges.
// Launch: grid = ((n + 15) / 16, (m + 15) / 16), block = 256.
constexpr int TILE = 16;

extern "C" __global__ void atb_product(float* c, const float* a, const float* b, int m, int n,
                                       int k) {
  __shared__ float a_tile[TILE][TILE];  // a_tile[p][i]
  __shared__ float b_tile[TILE][TILE];  // b_tile[p][j]
  const int tx = threadIdx.x % TILE;
  const int ty = threadIdx.x / TILE;
  const int row = blockIdx.y * TILE + ty;  // i: a row of C, a column of A
  const int col = blockIdx.x * TILE + tx;  // j: a column of C and of B
  const int a_col = blockIdx.y * TILE + tx;
  float sum = 0.0f;
  for (int p0 = 0; p0 < k; p0 += TILE) {
    const int p = p0 + ty;
    a_tile[ty][tx] = (p < k && a_col < m) ? a[(size_t)p * m + a_col] : 0.0f;
    b_tile[ty][tx] = (p < k && col < n) ? b[(size_t)p * n + col] : 0.0f;
    __syncthreads();
    for (int q = 0; q < TILE; ++q) sum += a_tile[q][ty] * b_tile[q][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[(size_t)row * n + col] = sum;
}
