// C = A * B, row-major; a constexpr tile, whether each staged element is inside the matrix
// kept in a bool, the fill an if / else with braces and a comment in each branch
constexpr int T = 16;

extern "C" __global__ void k(float* C, const float* A, const float* B, int M, int N, int K) {
  __shared__ float sa[T][T];
  __shared__ float sb[T][T];
  const int row = blockIdx.y * T + threadIdx.y;
  const int col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int kt = 0; kt < (K + T - 1) / T; ++kt) {
    const int ka = kt * T + threadIdx.x;
    const int kb = kt * T + threadIdx.y;
    const bool a_in = row < M && ka < K;
    const bool b_in = kb < K && col < N;
    if (a_in) {
      sa[threadIdx.y][threadIdx.x] = A[row * K + ka];  // inside: the element
    } else {
      sa[threadIdx.y][threadIdx.x] = 0.0f;  // past the edge: adds nothing
    }
    if (b_in) {
      sb[threadIdx.y][threadIdx.x] = B[kb * N + col];
    } else {
      sb[threadIdx.y][threadIdx.x] = 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < T; ++kk) acc += sa[threadIdx.y][kk] * sb[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
