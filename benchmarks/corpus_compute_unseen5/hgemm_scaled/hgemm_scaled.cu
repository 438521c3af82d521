// C [M, N] = alpha * A [M, K] B [K, N]: A and B are half precision (__half), row-major; the
// products are summed in float and C is float. A 16 x 16 block owns a 16 x 16 tile of C;
// each step converts a 16 x 16 slice of A and one of B to float in shared memory (zeros past
// the edges), then the thread's pointers into A and B move on by one slice.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16).
#include <cuda_fp16.h>

#define BLK 16

extern "C" __global__ void hgemm_scaled(float* C, const __half* A, const __half* B, float alpha,
                                        int M, int N, int K) {
  __shared__ float sa[BLK][BLK];
  __shared__ float sb[BLK][BLK];
  int tx = threadIdx.x, ty = threadIdx.y;
  int i = blockIdx.y * BLK + ty;  // row of C and A
  int j = blockIdx.x * BLK + tx;  // column of C and B
  const __half* pa = A + (size_t)i * K + tx;  // walks along row i of A
  const __half* pb = B + (size_t)ty * N + j;  // walks down column j of B
  float acc = 0.0f;
  for (int kk = 0; kk < K; kk += BLK) {
    sa[ty][tx] = (i < M && kk + tx < K) ? __half2float(*pa) : 0.0f;
    sb[ty][tx] = (kk + ty < K && j < N) ? __half2float(*pb) : 0.0f;
    __syncthreads();
    for (int p = 0; p < BLK; p++) acc += sa[ty][p] * sb[p][tx];
    __syncthreads();
    pa += BLK;
    pb += (size_t)BLK * N;
  }
  if (i < M && j < N) C[(size_t)i * N + j] = alpha * acc;
}
