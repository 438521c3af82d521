// C = A * B, row-major; the tile a macro, indices through a macro, the k loop a while
#define TILE 16
#define AT(r, c, ld) ((r) * (ld) + (c))

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  const int r = blockIdx.y * TILE + threadIdx.y, c = blockIdx.x * TILE + threadIdx.x;
  float s = 0.f;
  int t = 0;
  while (t < K) {
    As[threadIdx.y][threadIdx.x] = (r < M && t + threadIdx.x < K) ? A[AT(r, t + threadIdx.x, K)] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < K && c < N) ? B[AT(t + threadIdx.y, c, N)] : 0.f;
    __syncthreads();
    for (int q = 0; q < TILE; q++) s += As[threadIdx.y][q] * Bs[q][threadIdx.x];
    __syncthreads();
    t += TILE;
  }
  if (r < M && c < N) C[AT(r, c, N)] = s;
}
