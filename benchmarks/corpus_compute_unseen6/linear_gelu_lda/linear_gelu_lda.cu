// Y [M, N] = gelu(X W + bias) for X [M, K] read from a wider buffer (row stride ldx >= K: a
// column slice of a larger activation), W [K, N] row-major and bias [N], fp32. gelu is the
// tanh approximation. A block of 32 x 16 threads owns a 16-row x 32-column tile of Y; each
// step copies a 16 x 16 slice of X and a 16 x 32 slice of W into shared memory (zeros past
// the edges), walking both with pointers.
// Launch: grid = ((N + 31) / 32, (M + 15) / 16), block = (32, 16).
struct Tile {
  static constexpr int ROWS = 16;   // rows of Y per block (threadIdx.y)
  static constexpr int COLS = 32;   // columns of Y per block (threadIdx.x)
  static constexpr int DEPTH = 16;  // k values per step
};
// threadIdx.y walks both a row of Y and a row of the W slice; threadIdx.x < DEPTH copies X
static_assert(Tile::ROWS == Tile::DEPTH && Tile::DEPTH <= Tile::COLS, "tile shapes are tied");

__device__ __forceinline__ float gelu_tanh(float v) {
  const float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(inner));
}

extern "C" __global__ void linear_gelu_lda(float* Y, const float* X, const float* W,
                                           const float* bias, int M, int N, int K, int ldx) {
  __shared__ float xs[Tile::ROWS][Tile::DEPTH];
  __shared__ float ws[Tile::DEPTH][Tile::COLS];
  const int col = blockIdx.x * Tile::COLS + threadIdx.x;
  const int row = blockIdx.y * Tile::ROWS + threadIdx.y;
  const int x_row = row;  // the X element this thread copies: (row, k0 + threadIdx.x)
  const float* xp = X + (size_t)x_row * ldx + threadIdx.x;
  const float* wp = W + (size_t)threadIdx.y * N + col;
  float acc = 0.0f;
  int k0 = 0;
  while (k0 < K) {
    if (threadIdx.x < Tile::DEPTH)
      xs[threadIdx.y][threadIdx.x] =
          (x_row < M && k0 + (int)threadIdx.x < K) ? *xp : 0.0f;
    ws[threadIdx.y][threadIdx.x] = (k0 + (int)threadIdx.y < K && col < N) ? *wp : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < Tile::DEPTH; ++kk) acc += xs[threadIdx.y][kk] * ws[kk][threadIdx.x];
    __syncthreads();
    k0 += Tile::DEPTH;
    xp += Tile::DEPTH;
    wp += (size_t)Tile::DEPTH * N;
  }
  if (row < M && col < N) Y[(size_t)row * N + col] = gelu_tanh(acc + bias[col]);
}
