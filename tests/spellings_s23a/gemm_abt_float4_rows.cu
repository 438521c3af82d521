// C = A * B^T (both row-major, K a multiple of 4), a 16 x 16 block; each operand tile
// loaded through float4 reinterpretation by a quarter of the threads (four k a load)
#define T 16
extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float as[T][T];
  __shared__ float bs[T][T];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += T) {
    if (tx < T / 4) {
      const int kk = t + 4 * tx;
      const int br = blockIdx.x * T + ty;
      float4 va = make_float4(0.f, 0.f, 0.f, 0.f), vb = va;
      if (row < M && kk < K) va = *reinterpret_cast<const float4*>(A + (size_t)row * K + kk);
      if (br < N && kk < K) vb = *reinterpret_cast<const float4*>(B + (size_t)br * K + kk);
      as[ty][4 * tx] = va.x; as[ty][4 * tx + 1] = va.y;
      as[ty][4 * tx + 2] = va.z; as[ty][4 * tx + 3] = va.w;
      bs[ty][4 * tx] = vb.x; bs[ty][4 * tx + 1] = vb.y;
      bs[ty][4 * tx + 2] = vb.z; bs[ty][4 * tx + 3] = vb.w;
    }
    __syncthreads();
    for (int i = 0; i < T; ++i) acc += as[ty][i] * bs[tx][i];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
