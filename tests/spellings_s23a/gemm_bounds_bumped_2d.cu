// C = A * B, row-major; a 2-D 16 x 16 block under __launch_bounds__, unsigned indices, the
// matrices walked by bumping their pointers to the block's first tile and then by a tile
// after each stage (A += TILE, B += TILE * N), the tile loop counting t up to K
#define TILE 16
extern "C" __global__ void __launch_bounds__(256)
k(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
  int M, int N, int K) {
  __shared__ float sa[TILE][TILE];
  __shared__ float sb[TILE][TILE];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned row = blockIdx.y * TILE + ty;
  const unsigned col = blockIdx.x * TILE + tx;
  A += (size_t)blockIdx.y * TILE * K;
  B += blockIdx.x * TILE;
  float sum = 0.0f;
  for (int t = 0; t < K; t += TILE) {
    sa[ty][tx] = (row < M && t + tx < K) ? A[ty * K + tx] : 0.0f;
    sb[ty][tx] = (t + ty < K && col < N) ? B[ty * N + tx] : 0.0f;
    __syncthreads();
    A += TILE;
    B += TILE * N;
    for (int i = 0; i < TILE; ++i) sum += sa[ty][i] * sb[i][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = sum;
}
