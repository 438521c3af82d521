// Complex single-precision matrix product, as in a beamformer or a frequency-domain filter
// bank: C = A B for A [M, K], B [K, N], C [M, N], row-major, every element an interleaved
// (re, im) pair of floats. 16 x 16 tiles of A and B are staged in shared memory, real and
// imaginary parts in separate arrays; one complex output per thread.
// Launch: grid = ((N + 15) / 16, (M + 15) / 16), block = (16, 16).
#define TILE 16

extern "C" __global__ void cgemm_f2(float* C, const float* A, const float* B, int M, int N,
                                    int K) {
  __shared__ float a_re[TILE][TILE], a_im[TILE][TILE];
  __shared__ float b_re[TILE][TILE], b_im[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float acc_re = 0.0f, acc_im = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
    int ka = t * TILE + tx;  // the column of A this thread stages
    int kb = t * TILE + ty;  // the row of B this thread stages
    if (row < M && ka < K) {
      a_re[ty][tx] = A[2 * (row * K + ka)];
      a_im[ty][tx] = A[2 * (row * K + ka) + 1];
    } else {
      a_re[ty][tx] = 0.0f;
      a_im[ty][tx] = 0.0f;
    }
    if (kb < K && col < N) {
      b_re[ty][tx] = B[2 * (kb * N + col)];
      b_im[ty][tx] = B[2 * (kb * N + col) + 1];
    } else {
      b_re[ty][tx] = 0.0f;
      b_im[ty][tx] = 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < TILE; k++) {
      acc_re += a_re[ty][k] * b_re[k][tx] - a_im[ty][k] * b_im[k][tx];
      acc_im += a_re[ty][k] * b_im[k][tx] + a_im[ty][k] * b_re[k][tx];
    }
    __syncthreads();
  }
  if (row < M && col < N) {
    C[2 * (row * N + col)] = acc_re;
    C[2 * (row * N + col) + 1] = acc_im;
  }
}
