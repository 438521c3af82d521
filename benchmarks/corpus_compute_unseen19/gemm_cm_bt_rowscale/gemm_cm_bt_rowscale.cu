// C = diag(s) * A * B^T in column-major storage, ported from a Fortran routine:
//   C(i,j) = s(i) * sum_{k=1..K} A(i,k) * B(j,k),   i = 1..M, j = 1..N
// A is M x K (leading dimension M), B is N x K (leading dimension N), C is M x N (leading
// dimension M). One element of C a thread; a 16 x 16 block covers 16 rows (x) by 16
// columns (y) of C.
// Launch: grid = ((M + 15) / 16, (N + 15) / 16), block = (16, 16).

#define A_(I, K) a[((K) - 1) * lda + ((I) - 1)]
#define B_(J, K) b[((K) - 1) * ldb + ((J) - 1)]
#define C_(I, J) c[((J) - 1) * ldc + ((I) - 1)]
#define S_(I) s[(I) - 1]

extern "C" __global__ void gemm_cm_bt_rowscale(float* c, const float* a, const float* b,
                                               const float* s, int M, int N, int K) {
  const int lda = M, ldb = N, ldc = M;
  const int i = blockIdx.x * 16 + threadIdx.x + 1;
  const int j = blockIdx.y * 16 + threadIdx.y + 1;
  if (i > M || j > N) return;
  float t = 0.0f;
  for (int k = 1; k <= K; ++k) {
    t = t + A_(i, k) * B_(j, k);
  }
  C_(i, j) = S_(i) * t;
}
