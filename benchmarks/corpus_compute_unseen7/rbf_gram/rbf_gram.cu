// Gaussian (RBF) kernel matrix between two point sets, as in kernel ridge regression or an
// SVM: G[i][j] = exp(-gamma * |x_i - y_j|^2) for X [M, D] and Y [N, D] (one point a row,
// row-major fp32). The squared distance is summed term by term (no |x|^2 + |y|^2 - 2 x.y
// expansion, which cancels badly for close points). The tile width is a template
// parameter and the exported kernel instantiates it at 16: a block of 16 x 16 threads owns
// a 16 x 16 tile of G and walks D in slices of 16, both slices staged in shared memory.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16).
template <int TILE>
__device__ void rbf_tile(float* G, const float* X, const float* Y, int M, int N, int D,
                         float gamma) {
  __shared__ float xs[TILE][TILE];
  __shared__ float ys[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * TILE + ty;     // the X point of this thread's output
  const int j = blockIdx.x * TILE + tx;     // the Y point of this thread's output
  const int ycopy = blockIdx.x * TILE + ty;  // the Y point this thread stages
  float dist = 0.0f;
  for (int d0 = 0; d0 < D; d0 += TILE) {
    xs[ty][tx] = (i < M && d0 + tx < D) ? X[i * D + d0 + tx] : 0.0f;
    ys[ty][tx] = (ycopy < N && d0 + tx < D) ? Y[ycopy * D + d0 + tx] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) {
      const float t = xs[ty][k] - ys[tx][k];
      dist += t * t;
    }
    __syncthreads();
  }
  if (i < M && j < N) G[i * N + j] = expf(-gamma * dist);
}

extern "C" __global__ void rbf_gram(float* G, const float* X, const float* Y, int M, int N,
                                    int D, float gamma) {
  rbf_tile<16>(G, X, Y, M, N, D, gamma);
}
