// C = A * B, row-major; both tiles carved out of one extern __shared__ buffer sized at
// launch (2 * 16 * 16 floats), indexed flat
#define TILE 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  extern __shared__ float smem[];
  float* As = smem;
  float* Bs = smem + TILE * TILE;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    As[ty * TILE + tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty * TILE + tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += As[ty * TILE + i] * Bs[i * TILE + tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
