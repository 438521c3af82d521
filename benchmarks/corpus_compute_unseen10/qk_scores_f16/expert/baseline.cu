// Attention scores of one layer before the softmax: S[b][i][j] = scale * <Q[b][i], K[b][j]>
// for every batch-head b, query i and key j. Q and K are half precision [BH, L, D], S is
// float [BH, L, L]; products summed in float. A templated tile routine stages TILE x TILE
// slices of Q and K (converted to float) in shared memory, one score per thread; the
// kernel instantiates it at 16 and takes the batch-head from blockIdx.z.
// Launch: grid = ((L + 15) / 16, (L + 15) / 16, BH), block = (16, 16).
#include <cuda_fp16.h>

template <int TILE>
__device__ void score_tile(float* S, const __half* Q, const __half* K, int L, int D,
                           float scale) {
  __shared__ float qs[TILE][TILE];
  __shared__ float ks[TILE][TILE + 1];  // read down a column: padded against conflicts
  const int b = blockIdx.z;
  const int i = blockIdx.y * TILE + threadIdx.y;  // this thread's query
  const int j = blockIdx.x * TILE + threadIdx.x;  // this thread's key
  const int key_row = blockIdx.x * TILE + threadIdx.y;  // the key row it stages
  const __half* qb = Q + (size_t)b * L * D;
  const __half* kb = K + (size_t)b * L * D;
  float acc = 0.0f;
  for (int d0 = 0; d0 < D; d0 += TILE) {
    const int d = d0 + threadIdx.x;
    qs[threadIdx.y][threadIdx.x] = (i < L && d < D) ? __half2float(qb[(size_t)i * D + d]) : 0.0f;
    ks[threadIdx.y][threadIdx.x] =
        (key_row < L && d < D) ? __half2float(kb[(size_t)key_row * D + d]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += qs[threadIdx.y][k] * ks[threadIdx.x][k];
    __syncthreads();
  }
  if (i < L && j < L) S[((size_t)b * L + i) * L + j] = scale * acc;
}

extern "C" __global__ void qk_scores_f16(float* S, const __half* Q, const __half* K, int L,
                                         int D, float scale) {
  score_tile<16>(S, Q, K, L, D, scale);
}
