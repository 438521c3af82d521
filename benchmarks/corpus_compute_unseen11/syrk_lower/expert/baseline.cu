// C = A Aᵀ for A [n, k] (row-major floats), lower triangle only: C[i][j] for j <= i, zeros
// above the diagonal (C [n, n]). The tile routine is a class template instantiated at 16;
// a block of 16 x 16 threads owns one 16 x 16 tile of C and stages a 16-wide slice of the
// tile's rows of A and of its columns' rows of A per step. Tiles wholly above the diagonal
// only write their zeros.
// Launch: grid = ((n + 15) / 16, (n + 15) / 16), block = (16, 16).

template <int TILE>
struct LowerTile {
  __device__ static void run(float* C, const float* A, int n, int k) {
    __shared__ float rows_i[TILE][TILE];
    __shared__ float rows_j[TILE][TILE + 1];  // read down its columns: padded
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int i = blockIdx.y * TILE + ty;
    const int j = blockIdx.x * TILE + tx;
    if (blockIdx.x > blockIdx.y) {
      if (i < n && j < n) C[(size_t)i * n + j] = 0.0f;
      return;
    }
    const int j_row = blockIdx.x * TILE + ty;  // the row of A this thread stages for j
    float sum = 0.0f;
    for (int k0 = 0; k0 < k; k0 += TILE) {
      const int kk = k0 + tx;
      rows_i[ty][tx] = (i < n && kk < k) ? A[(size_t)i * k + kk] : 0.0f;
      rows_j[ty][tx] = (j_row < n && kk < k) ? A[(size_t)j_row * k + kk] : 0.0f;
      __syncthreads();
#pragma unroll
      for (int q = 0; q < TILE; ++q) sum += rows_i[ty][q] * rows_j[tx][q];
      __syncthreads();
    }
    if (i < n && j < n) C[(size_t)i * n + j] = (j <= i) ? sum : 0.0f;
  }
};

extern "C" __global__ void syrk_lower(float* C, const float* A, int n, int k) {
  LowerTile<16>::run(C, A, n, k);
}
