// out[b] = lhs[b] . rhs[b], batched small fp32 matrices. Expert parameterization (hand-
// written): a block computes a BM x BN piece of one product (blockIdx.z = b) from shared
// tiles of lhs (BM x BK, stored k-major) and rhs (BK x BN); each thread keeps a TM x TN
// register tile (rows ty + i * (BM / TM), columns tx + j * (BN / TN)); VEC 4 loads the
// tiles as float4 where inner (lhs) or cols (rhs) is a multiple of 4.
// Launch: grid = (ceil(cols / BN), ceil(rows / BM), batch), block = (BN / TN, BM / TM).
// Defaults: the kernel as written (TW = 16).
#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 16
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 1
#endif
#ifndef TN
#define TN 1
#endif
#ifndef VEC
#define VEC 1
#endif

#define THREADS_X (BN / TN)
#define THREADS_Y (BM / TM)
#define THREADS (THREADS_X * THREADS_Y)

extern "C" __global__ void __launch_bounds__(THREADS)
batched_matmul(float* __restrict__ out, const float* __restrict__ lhs,
               const float* __restrict__ rhs, int batch, int rows, int inner, int cols) {
  __shared__ float sl[BK][BM];
  __shared__ __align__(16) float sr[BK][BN];
  const int b = blockIdx.z;
  const float* L = lhs + (long long)b * rows * inner;
  const float* Rm = rhs + (long long)b * inner * cols;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * THREADS_X + tx;
  const int r0 = blockIdx.y * BM, c0 = blockIdx.x * BN;
  // float4 loads need 16-byte aligned rows and matrices
  const bool vec_l = VEC == 4 && (inner & 3) == 0;
  const bool vec_r = VEC == 4 && (cols & 3) == 0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int p = 0; p < inner; p += BK) {
    if (vec_l) {
      for (int v = tid; v < BM * (BK / 4); v += THREADS) {
        const int r = v / (BK / 4), c = (v % (BK / 4)) * 4;
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r0 + r < rows && p + c < inner)
          a = *reinterpret_cast<const float4*>(L + (r0 + r) * inner + p + c);
        sl[c][r] = a.x;
        sl[c + 1][r] = a.y;
        sl[c + 2][r] = a.z;
        sl[c + 3][r] = a.w;
      }
    } else {
      for (int e = tid; e < BM * BK; e += THREADS) {
        const int r = e / BK, c = e % BK;
        sl[c][r] = (r0 + r < rows && p + c < inner) ? L[(r0 + r) * inner + p + c] : 0.0f;
      }
    }
    if (vec_r) {
      for (int v = tid; v < BK * (BN / 4); v += THREADS) {
        const int r = v / (BN / 4), c = (v % (BN / 4)) * 4;
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (p + r < inner && c0 + c < cols)
          a = *reinterpret_cast<const float4*>(Rm + (p + r) * cols + c0 + c);
        *reinterpret_cast<float4*>(&sr[r][c]) = a;
      }
    } else {
      for (int e = tid; e < BK * BN; e += THREADS) {
        const int r = e / BN, c = e % BN;
        sr[r][c] = (p + r < inner && c0 + c < cols) ? Rm[(p + r) * cols + c0 + c] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < BK; ++q) {
      float a[TM], w[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = sl[q][ty + i * THREADS_Y];
#pragma unroll
      for (int j = 0; j < TN; ++j) w[j] = sr[q][tx + j * THREADS_X];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * w[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = r0 + ty + i * THREADS_Y;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = c0 + tx + j * THREADS_X;
      if (r < rows && c < cols) out[((long long)b * rows + r) * cols + c] = acc[i][j];
    }
  }
}
