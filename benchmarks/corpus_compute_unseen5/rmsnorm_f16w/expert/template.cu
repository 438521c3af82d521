// RMS normalisation of half rows with a half weight, float sums, half output. Expert
// parameterization (hand-written): a (THREADS, ROWS) block normalises ROWS rows, THREADS
// threads a row (threadIdx.y picks the row); each thread loads VEC halves at a time when the
// row length is a multiple of VEC (the rows are then VEC-aligned), else one at a time.
// REDUCE 0 adds the row's sums of squares in a shared-memory tree (as written); 1 adds them
// inside each warp with shuffles, then the per-warp sums through shared memory. Rows past
// the last run no loads but take part in every barrier.
// Launch: grid = ceil(rows / ROWS), block = (THREADS, ROWS).
// Defaults: the kernel as written (a block of 256 threads a row, scalar loads, the tree).
#include <cuda_fp16.h>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef REDUCE
#define REDUCE 0
#endif
#define EPS 1e-5f

// VEC consecutive halves, loaded and stored as one access
template <int V>
struct alignas(2 * V) HalfVec {
  __half h[V];
};

extern "C" __global__ void __launch_bounds__(THREADS * ROWS, 1)
rmsnorm_f16w(__half* __restrict__ y, const __half* __restrict__ x, const __half* __restrict__ w,
             int rows, int cols) {
  const int t = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.x * ROWS + ty;
  const bool valid = row < rows;
  const __half* xr = x + (size_t)(valid ? row : 0) * cols;
  __half* yr = y + (size_t)(valid ? row : 0) * cols;
  const bool vec_ok = VEC > 1 && cols % VEC == 0;
  float ss = 0.0f;
  if (valid) {
    if (vec_ok) {
      const HalfVec<VEC>* xv = reinterpret_cast<const HalfVec<VEC>*>(xr);
      for (int g = t; g < cols / VEC; g += THREADS) {
        const HalfVec<VEC> v = xv[g];
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const float f = __half2float(v.h[k]);
          ss += f * f;
        }
      }
    } else {
      for (int c = t; c < cols; c += THREADS) {
        const float f = __half2float(xr[c]);
        ss += f * f;
      }
    }
  }
#if REDUCE == 0
  __shared__ float partial[ROWS][THREADS];
  partial[ty][t] = ss;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) partial[ty][t] += partial[ty][t + s];
    __syncthreads();
  }
  const float total = partial[ty][0];
#else
#pragma unroll
  for (int off = 16; off > 0; off /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  __shared__ float warp_sum[ROWS][THREADS / 32];
  if (t % 32 == 0) warp_sum[ty][t / 32] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < THREADS / 32; ++k) total += warp_sum[ty][k];
#endif
  if (!valid) return;
  const float inv = rsqrtf(total / cols + EPS);
  if (vec_ok) {
    const HalfVec<VEC>* xv = reinterpret_cast<const HalfVec<VEC>*>(xr);
    const HalfVec<VEC>* wv = reinterpret_cast<const HalfVec<VEC>*>(w);
    HalfVec<VEC>* yv = reinterpret_cast<HalfVec<VEC>*>(yr);
    for (int g = t; g < cols / VEC; g += THREADS) {
      const HalfVec<VEC> v = xv[g];
      const HalfVec<VEC> s = wv[g];
      HalfVec<VEC> out;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        out.h[k] = __float2half(__half2float(v.h[k]) * inv * __half2float(s.h[k]));
      yv[g] = out;
    }
  } else {
    for (int c = t; c < cols; c += THREADS)
      yr[c] = __float2half(__half2float(xr[c]) * inv * __half2float(w[c]));
  }
}
