// minval, argmin [batch, nchunks] = each 4096-float chunk's smallest value in each row of
// x [batch, n] and its index in the row (the first of ties).
// Expert parameterization (hand-written): a block of THREADS threads takes one chunk of one
// row (blockIdx.y); each thread keeps ITEMS independent (value, index) pairs over VEC-wide
// loads (float2 / float4 when n is a multiple of VEC, so every chunk is aligned; else the
// scalar loop), then the block merges the pairs by warp shuffles and one shared stage
// (SHFL 1) or by a shared-memory tree (SHFL 0). Pairs merge by (value, index), so any
// order gives the kernel as written's result.
// Launch: grid = (nchunks, batch), block = THREADS.
// Defaults: 256 threads, one pair, scalar loads, the shared tree (as written).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef SHFL
#define SHFL 0
#endif
#define CHUNK 4096

struct MinAt {
  float v;
  int i;
};

__device__ __forceinline__ MinAt smaller(MinAt a, MinAt b) {
  return (b.v < a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

// The thread's pair over [start, stop) of the row, VEC floats a load (the chunk's start is
// a multiple of VEC when vec is set), ITEMS pairs kept apart.
__device__ MinAt thread_min(const float* row, int start, int stop, int n, bool vec) {
  MinAt acc[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) acc[j] = MinAt{3.402823466e38f, n};
  if (VEC > 1 && vec) {
    for (int base = start + threadIdx.x * VEC; base < stop; base += THREADS * VEC * ITEMS) {
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const int at = base + j * THREADS * VEC;
        if (at < stop) {
#if VEC == 4
          const float4 q4 = *reinterpret_cast<const float4*>(row + at);
          const float e[4] = {q4.x, q4.y, q4.z, q4.w};
#elif VEC == 2
          const float2 q2 = *reinterpret_cast<const float2*>(row + at);
          const float e[2] = {q2.x, q2.y};
#else
          const float e[1] = {row[at]};
#endif
#pragma unroll
          for (int q = 0; q < VEC; ++q)
            if (e[q] < acc[j].v) acc[j] = MinAt{e[q], at + q};
        }
      }
    }
  } else {
    for (int base = start + threadIdx.x; base < stop; base += THREADS * ITEMS) {
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const int at = base + j * THREADS;
        if (at < stop && row[at] < acc[j].v) acc[j] = MinAt{row[at], at};
      }
    }
  }
  MinAt best = acc[0];
#pragma unroll
  for (int j = 1; j < ITEMS; ++j) best = smaller(best, acc[j]);
  return best;
}

extern "C" __global__ void __launch_bounds__(THREADS)
argmin_chunks(float* __restrict__ minval, int* __restrict__ argmin,
              const float* __restrict__ x, int n, int nchunks) {
  const int start = blockIdx.x * CHUNK;
  const int stop = start + CHUNK < n ? start + CHUNK : n;
  MinAt best = thread_min(x + (size_t)blockIdx.y * n, start, stop, n, n % VEC == 0);
#if SHFL
  __shared__ float sv[THREADS / 32];
  __shared__ int si[THREADS / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const MinAt other = {__shfl_xor_sync(0xffffffffu, best.v, off),
                         __shfl_xor_sync(0xffffffffu, best.i, off)};
    best = smaller(best, other);
  }
  if (threadIdx.x % 32 == 0) {
    sv[threadIdx.x / 32] = best.v;
    si[threadIdx.x / 32] = best.i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < THREADS / 32; ++w) best = smaller(best, MinAt{sv[w], si[w]});
  }
#else
  __shared__ float sv[THREADS];
  __shared__ int si[THREADS];
  sv[threadIdx.x] = best.v;
  si[threadIdx.x] = best.i;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const MinAt mine = smaller(MinAt{sv[threadIdx.x], si[threadIdx.x]},
                                 MinAt{sv[threadIdx.x + half], si[threadIdx.x + half]});
      sv[threadIdx.x] = mine.v;
      si[threadIdx.x] = mine.i;
    }
    __syncthreads();
  }
  best = MinAt{sv[0], si[0]};
#endif
  if (threadIdx.x == 0) {
    minval[(size_t)blockIdx.y * nchunks + blockIdx.x] = best.v;
    argmin[(size_t)blockIdx.y * nchunks + blockIdx.x] = best.i;
  }
}
