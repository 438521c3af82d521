// Y [M, N] = relu(X [M, K] * W^T + b): the forward pass of a fully connected layer with its
// ReLU fused, float. W is stored the way nn.Linear keeps it, [N, K] (out_features x
// in_features), so both operands are contiguous along K.
// A block computes an 8 x 32 tile of Y, one output per thread, walking K 32 at a time
// through shared memory; lane = threadIdx.x indexes N for the output and K for the loads.
// Launch: grid = ((N + 31) / 32, (M + 7) / 8), block = (32, 8).
#define TILE_M 8
#define TILE_N 32
#define TILE_K 32

extern "C" __global__ void dense_relu(float* Y, const float* X, const float* W, const float* b,
                                      int M, int N, int K) {
  __shared__ float xs[TILE_M][TILE_K];
  // +1: the k loop reads ws[lane][kk], one row per lane; the pad puts the rows on different
  // banks
  __shared__ float ws[TILE_N][TILE_K + 1];
  int lane = threadIdx.x;
  int r = threadIdx.y;
  int m = blockIdx.y * TILE_M + r;
  int n = blockIdx.x * TILE_N + lane;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE_K) {
    int k = k0 + lane;
    xs[r][lane] = (m < M && k < K) ? X[(size_t)m * K + k] : 0.0f;
    for (int j = r; j < TILE_N; j += TILE_M) {
      int wn = blockIdx.x * TILE_N + j;
      ws[j][lane] = (wn < N && k < K) ? W[(size_t)wn * K + k] : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < TILE_K; ++kk) sum += xs[r][kk] * ws[lane][kk];
    __syncthreads();
  }
  if (m < M && n < N) Y[(size_t)m * N + n] = fmaxf(sum + b[n], 0.0f);
}
