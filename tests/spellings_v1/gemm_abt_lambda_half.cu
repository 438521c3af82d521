// C = A * B^T with A [M][K] and B [N][K] half, C float, products summed in float; the tile
// loads through index lambdas, the tiles stored as float, B's tile padded
#include <cuda_fp16.h>
#define TILE_DIM 16
extern "C" __global__ void k(float* C, const __half* A, const __half* B, int M, int N, int K) {
  __shared__ float as[TILE_DIM][TILE_DIM];
  __shared__ float bs[TILE_DIM][TILE_DIM + 1];
  const int i = blockIdx.y * TILE_DIM + threadIdx.y;
  const int j = blockIdx.x * TILE_DIM + threadIdx.x;
  const int jb = blockIdx.x * TILE_DIM + threadIdx.y;  // the row of B this thread stages
  auto a_at = [&](int r, int kk) { return (size_t)r * K + kk; };
  auto b_at = [&](int r, int kk) { return (size_t)r * K + kk; };
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE_DIM) {
    const int kx = k0 + threadIdx.x;
    as[threadIdx.y][threadIdx.x] = (i < M && kx < K) ? __half2float(A[a_at(i, kx)]) : 0.0f;
    bs[threadIdx.y][threadIdx.x] = (jb < N && kx < K) ? __half2float(B[b_at(jb, kx)]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE_DIM; ++kk) sum += as[threadIdx.y][kk] * bs[threadIdx.x][kk];
    __syncthreads();
  }
  if (i < M && j < N) C[(size_t)i * N + j] = sum;
}
