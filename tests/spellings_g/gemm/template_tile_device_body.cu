// C = A * B, row-major; the kernel's body a template __device__ function of the tile size
template <int TS>
__device__ void tiled_product(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float a_tile[TS][TS];
  __shared__ float b_tile[TS][TS];
  int y = blockIdx.y * TS + threadIdx.y;
  int x = blockIdx.x * TS + threadIdx.x;
  float sum = 0.0f;
  for (int base = 0; base < K; base += TS) {
    a_tile[threadIdx.y][threadIdx.x] = (y < M && base + threadIdx.x < K) ? A[y * K + base + threadIdx.x] : 0.0f;
    b_tile[threadIdx.y][threadIdx.x] = (base + threadIdx.y < K && x < N) ? B[(base + threadIdx.y) * N + x] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < TS; ++i) sum += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
    __syncthreads();
  }
  if (y < M && x < N) C[y * N + x] = sum;
}

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  tiled_product<16>(C, A, B, M, N, K);
}
