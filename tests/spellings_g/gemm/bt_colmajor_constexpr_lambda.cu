// C [M, N] = A [M, K] * B [K, N] with B stored column-major (element (k, c) at Bt[c * K + k]),
// the tile a constexpr, the loads through index lambdas
constexpr int TS = 16;

extern "C" __global__ void k(float* C, const float* A, const float* Bt, int M, int N, int K) {
  __shared__ float sa[TS][TS];
  __shared__ float sb[TS][TS];
  const int tr = threadIdx.y;
  const int tc = threadIdx.x;
  const int row = blockIdx.y * TS + tr;
  const int col = blockIdx.x * TS + tc;
  auto a_at = [&](int r, int kk) { return (r < M && kk < K) ? A[r * K + kk] : 0.0f; };
  auto b_at = [&](int kk, int c) { return (kk < K && c < N) ? Bt[c * K + kk] : 0.0f; };
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    sa[tr][tc] = a_at(row, k0 + tc);
    sb[tr][tc] = b_at(k0 + tr, col);
    __syncthreads();
    for (int kk = 0; kk < TS; ++kk) acc += sa[tr][kk] * sb[kk][tc];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
