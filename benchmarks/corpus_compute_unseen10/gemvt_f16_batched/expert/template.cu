// y[b][j] = sum_i A[b][i][j] x[b][i], half A [batch, rows, cols], float x, y and sums.
// Expert parameterization (hand-written): a block of TX x RSPLIT threads owns TX * VEC
// consecutive columns of one batch entry (blockIdx.y); a thread reads VEC halves of a row
// in one load (VEC 1: a half; 2, 4, 8: 4-, 8-, 16-byte words, cols % VEC == 0 keeps them
// aligned), the RSPLIT rows of threads take every RSPLIT-th row (more loads in flight for
// few columns), UNROLL rows loaded before any is added; the rows of threads add their sums
// in row-of-threads order through shared memory at the end. Each thread's sums run over
// its rows in order.
// Launch: grid = (ceil(cols / (TX * VEC)), batch), block = (TX, RSPLIT).
// Defaults: the kernel as written (256 threads, a column each, every row).
#include <cuda_fp16.h>

#ifndef TX
#define TX 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef RSPLIT
#define RSPLIT 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

// VEC halves as one load
template <int N> struct Pack;
template <> struct Pack<1> { typedef __half type; };
template <> struct Pack<2> { typedef unsigned type; };
template <> struct Pack<4> { typedef uint2 type; };
template <> struct Pack<8> { typedef uint4 type; };
typedef Pack<VEC>::type pack_t;

extern "C" __global__ void __launch_bounds__(TX * RSPLIT)
gemvt_f16_batched(float* __restrict__ y, const __half* __restrict__ A,
                  const float* __restrict__ x, int rows, int cols) {
  const int col = (blockIdx.x * TX + threadIdx.x) * VEC;
  const int b = blockIdx.y;
  const int ty = threadIdx.y;
  const bool active = col < cols;
  const __half* ab = A + (size_t)b * rows * cols + (active ? col : 0);
  const float* xb = x + (size_t)b * rows;
  float sum[VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v) sum[v] = 0.0f;
  if (active) {
    int i = ty;
    for (; i + (UNROLL - 1) * RSPLIT < rows; i += UNROLL * RSPLIT) {
      pack_t p[UNROLL];
      float xi[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        p[u] = __ldg(reinterpret_cast<const pack_t*>(ab + (size_t)(i + u * RSPLIT) * cols));
        xi[u] = __ldg(xb + i + u * RSPLIT);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const __half* h = reinterpret_cast<const __half*>(&p[u]);
#pragma unroll
        for (int v = 0; v < VEC; ++v) sum[v] += __half2float(h[v]) * xi[u];
      }
    }
    for (; i < rows; i += RSPLIT) {
      const pack_t p = __ldg(reinterpret_cast<const pack_t*>(ab + (size_t)i * cols));
      const float xi = __ldg(xb + i);
      const __half* h = reinterpret_cast<const __half*>(&p);
#pragma unroll
      for (int v = 0; v < VEC; ++v) sum[v] += __half2float(h[v]) * xi;
    }
  }
#if RSPLIT > 1
  __shared__ float part[RSPLIT - 1][TX * VEC];
  if (ty > 0) {
#pragma unroll
    for (int v = 0; v < VEC; ++v) part[ty - 1][threadIdx.x * VEC + v] = sum[v];
  }
  __syncthreads();
  if (ty > 0) return;
  for (int r = 0; r < RSPLIT - 1; ++r) {
#pragma unroll
    for (int v = 0; v < VEC; ++v) sum[v] += part[r][threadIdx.x * VEC + v];
  }
#endif
  if (!active) return;
#pragma unroll
  for (int v = 0; v < VEC; ++v) y[(size_t)b * cols + col + v] = sum[v];
}
