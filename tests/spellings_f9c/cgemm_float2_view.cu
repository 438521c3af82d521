// C = A B for complex float32 stored as interleaved (re, im) floats, row-major; the kernel
// views A and B as float2 pairs (reinterpret_cast), stages float2 tiles with an if / else
// and writes C as two floats an output
#define TILE 16

extern "C" __global__ void cgemm_f2(float* C, const float* A, const float* B, int M, int N,
                                    int K) {
  __shared__ float2 as[TILE][TILE];
  __shared__ float2 bs[TILE][TILE];
  const float2* A2 = reinterpret_cast<const float2*>(A);
  const float2* B2 = reinterpret_cast<const float2*>(B);
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float re = 0.0f, im = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    if (row < M && t + tx < K) {
      as[ty][tx] = A2[row * K + t + tx];
    } else {
      as[ty][tx] = make_float2(0.0f, 0.0f);
    }
    if (t + ty < K && col < N) {
      bs[ty][tx] = B2[(t + ty) * N + col];
    } else {
      bs[ty][tx] = make_float2(0.0f, 0.0f);
    }
    __syncthreads();
    for (int k = 0; k < TILE; k++) {
      float2 a = as[ty][k], b = bs[k][tx];
      re += a.x * b.x - a.y * b.y;
      im += a.x * b.y + a.y * b.x;
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[2 * (row * N + col)] = re;
    C[2 * (row * N + col) + 1] = im;
  }
}
