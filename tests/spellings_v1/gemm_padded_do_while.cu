// C = A * B, row-major; the tile a #define, the tiles padded [T][T + 1], the k-stages
// walked by a do-while counting stages, the inner product unrolled on a literal
#define T 16
extern "C" __global__ void k(float* __restrict__ C, const float* __restrict__ A,
                  const float* __restrict__ B, int M, int N, int K) {
  __shared__ float sa[T][T + 1];
  __shared__ float sb[T][T + 1];
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int r = blockIdx.y * T + ty;
  const int c = blockIdx.x * T + tx;
  float s = 0.0f;
  int t = 0;
  do {
    const int ka = t * T + tx;
    const int kb = t * T + ty;
    sa[ty][tx] = (r < M && ka < K) ? A[r * K + ka] : 0.0f;
    sb[ty][tx] = (kb < K && c < N) ? B[kb * N + c] : 0.0f;
    __syncthreads();
#pragma unroll 16
    for (int i = 0; i < T; ++i) s += sa[ty][i] * sb[i][tx];
    __syncthreads();
    ++t;
  } while (t * T < K);
  if (r < M && c < N) C[r * N + c] = s;
}
