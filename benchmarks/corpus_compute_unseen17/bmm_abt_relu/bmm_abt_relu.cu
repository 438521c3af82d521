// Batched C[l] = relu(A[l] * B[l]^T + bias), A [L, M, K], B [L, N, K], bias [N], C [L, M, N],
// row-major. 16 x 16 tiles of A and B in flat shared arrays; one output a thread of a
// 16 x 16 block, one matrix per grid layer.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16, L), block = (16, 16).

#define TILE 16

struct RowMajor {
  const float* base;
  int ld;
  __device__ inline float get(int r, int c) const { return base[(size_t)r * ld + c]; }
};

extern "C" __global__ void bmm_abt_relu(float* c, const float* a, const float* b,
                                        const float* bias, int M, int N, int K) {
  __shared__ float sa[TILE * TILE];
  __shared__ float sb[TILE * TILE];
  const int l = blockIdx.z;
  const RowMajor A{a + (size_t)l * M * K, K};
  const RowMajor B{b + (size_t)l * N * K, K};
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  const int brow = blockIdx.x * TILE + ty;
  float acc = 0.0f;
  int k0 = 0;
  while (k0 < K) {
    sa[ty * TILE + tx] = (row < M && k0 + tx < K) ? A.get(row, k0 + tx) : 0.0f;
    sb[tx * TILE + ty] = (brow < N && k0 + tx < K) ? B.get(brow, k0 + tx) : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += sa[ty * TILE + kk] * sb[kk * TILE + tx];
    __syncthreads();
    k0 += TILE;
  }
  if (row < M && col < N) {
    const float v = acc + bias[col];
    c[((size_t)l * M + row) * N + col] = v > 0.0f ? v : 0.0f;
  }
}
