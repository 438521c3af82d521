// C = A B for complex float2 matrices, row-major; float2 tiles filled by an if / else, the
// product through float2 locals; C written as interleaved (re, im) floats
#define TILE 16

extern "C" __global__ void k(float* C, const float2* A, const float2* B, int M, int N, int K) {
  __shared__ float2 as[TILE][TILE];
  __shared__ float2 bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float re = 0.0f, im = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    if (row < M && t + tx < K) {
      as[ty][tx] = A[row * K + t + tx];
    } else {
      as[ty][tx] = make_float2(0.0f, 0.0f);
    }
    if (t + ty < K && col < N) {
      bs[ty][tx] = B[(t + ty) * N + col];
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
