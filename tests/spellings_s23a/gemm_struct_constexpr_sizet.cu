// C = A * B, row-major; the tile a static constexpr member of a struct, the inner loop
// under #pragma unroll over it, size_t element offsets and an early return of the threads
// past C after the last barrier
struct Tile {
  static constexpr int S = 16;
};

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float a_s[Tile::S][Tile::S];
  __shared__ float b_s[Tile::S][Tile::S];
  const int r = blockIdx.y * Tile::S + threadIdx.y;
  const int c = blockIdx.x * Tile::S + threadIdx.x;
  float v = 0.0f;
  for (int k0 = 0; k0 < K; k0 += Tile::S) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    a_s[threadIdx.y][threadIdx.x] = (r < M && ka < K) ? A[(size_t)r * K + ka] : 0.0f;
    b_s[threadIdx.y][threadIdx.x] = (kb < K && c < N) ? B[(size_t)kb * N + c] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < Tile::S; ++i) v += a_s[threadIdx.y][i] * b_s[i][threadIdx.x];
    __syncthreads();
  }
  if (r >= M || c >= N) return;
  C[(size_t)r * N + c] = v;
}
