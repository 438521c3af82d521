// C = diag(s) A B^T, column-major: a pointer hand. Each operand walked down its column of
// k by its leading dimension; __restrict__ inputs; an early return.
extern "C" __global__ void gemm_cm_bt_rowscale(float* __restrict__ c,
                                               const float* __restrict__ a,
                                               const float* __restrict__ b,
                                               const float* __restrict__ s, int M, int N,
                                               int K) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* pa = a + row;
  const float* pb = b + col;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += *pa * *pb;
    pa += M;
    pb += N;
  }
  c[col * M + row] = s[row] * acc;
}
