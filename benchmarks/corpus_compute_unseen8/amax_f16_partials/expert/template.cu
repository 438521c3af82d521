// Partial absolute maxima of half x for a 264-slot partial buffer. Expert parameterization
// (hand-written): BLOCKS blocks (at most the 264 slots; the slots past the grid get 0, which
// no |x| is below) of THREADS threads walk x in VEC-half vectors (1: as written; 2: one
// 4-byte load; 8: one 16-byte load; the buffer starts aligned and the last n % VEC halves
// are read one at a time), UNROLL vectors a thread loaded before any is reduced (more loads
// in flight per thread), then fold the block's maxima with a shared-memory tree (FINAL 0,
// as written) or warp shuffles and one shared word per warp (FINAL 1). A max does not
// depend on the order, so every config gives the exact max |x|.
// Launch: grid = BLOCKS, block = THREADS. Defaults: the kernel as written.
#include <cuda_fp16.h>
#ifndef BLOCKS
#define BLOCKS 264
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef FINAL
#define FINAL 0
#endif
#define SLOTS 264

#if VEC == 8
typedef float4 vec_t;
#elif VEC == 2
typedef float vec_t;
#else
typedef __half vec_t;
#endif

__device__ __forceinline__ float vec_absmax(vec_t v) {
  const __half* h = reinterpret_cast<const __half*>(&v);
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < VEC; ++k) m = fmaxf(m, fabsf(__half2float(h[k])));
  return m;
}

extern "C" __global__ void __launch_bounds__(THREADS)
amax_f16_partials(float* __restrict__ partial, const __half* __restrict__ x, int n) {
  const vec_t* xv = reinterpret_cast<const vec_t*>(x);
  const long long whole = n / VEC;
  const long long stride = (long long)BLOCKS * THREADS;
  const long long gid = (long long)blockIdx.x * THREADS + threadIdx.x;
  float m = 0.0f;
  long long g = gid;
  for (; g + (UNROLL - 1) * stride < whole; g += UNROLL * stride) {
    vec_t v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(xv + g + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) m = fmaxf(m, vec_absmax(v[u]));
  }
  for (; g < whole; g += stride) m = fmaxf(m, vec_absmax(__ldg(xv + g)));
  // the halves past the last whole vector
  const long long tail = whole * VEC + gid;
  if (tail < n) m = fmaxf(m, fabsf(__half2float(x[tail])));

#if FINAL == 0
  __shared__ float red[THREADS];
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float block_max = red[0];
#else
  __shared__ float warp_max[THREADS / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  float block_max = 0.0f;
#pragma unroll
  for (int w = 0; w < THREADS / 32; ++w) block_max = fmaxf(block_max, warp_max[w]);
#endif
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = block_max;
    for (int s = BLOCKS + blockIdx.x; s < SLOTS; s += BLOCKS) partial[s] = 0.0f;
  }
}
