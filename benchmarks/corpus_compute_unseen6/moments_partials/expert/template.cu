// Per-chunk sums and sums of squares (in double) of x, one partial pair per chunk slot.
// Expert parameterization (hand-written): a block of THREADS threads takes CHUNKS
// consecutive chunks of 4096 elements, reads them VEC floats at a time (VEC 1 scalar as
// written; 2 and 4 float2 / float4: a chunk starts 16 KB into the buffer, so it is aligned;
// the elements past the last whole vector of the block's range are read one at a time) and
// writes its totals to the slot of its first chunk and 0 to the other CHUNKS - 1 slots, so
// the host's sum over all slots is right. FINAL 0 adds every thread's sums into two shared
// doubles with atomicAdd (as written); 1 adds them within each warp with shuffles first, then
// the warps' sums in shared memory.
// Launch: grid = ceil(n / (4096 * CHUNKS)), block = THREADS. Defaults: the kernel as written.
#ifndef CHUNKS
#define CHUNKS 1
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef FINAL
#define FINAL 0
#endif
#define CHUNK 4096
#define SPAN (CHUNK * CHUNKS)

__device__ __forceinline__ void add_value(double& s, double& q, float f) {
  const double v = f;
  s += v;
  q += v * v;
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
moments_partials(float* __restrict__ sums, float* __restrict__ sumsq,
                 const float* __restrict__ x, int n) {
  const int tid = threadIdx.x;
  const size_t begin = (size_t)blockIdx.x * SPAN;
  const int count = (int)min((size_t)SPAN, (size_t)n - begin);
  const float* span = x + begin;
  double s = 0.0, q = 0.0;
#if VEC == 1
  for (int j = tid; j < count; j += THREADS) add_value(s, q, __ldg(span + j));
#else
  const int whole = count / VEC;
  for (int g = tid; g < whole; g += THREADS) {
#if VEC == 4
    const float4 v = __ldg(reinterpret_cast<const float4*>(span) + g);
    add_value(s, q, v.x);
    add_value(s, q, v.y);
    add_value(s, q, v.z);
    add_value(s, q, v.w);
#else
    const float2 v = __ldg(reinterpret_cast<const float2*>(span) + g);
    add_value(s, q, v.x);
    add_value(s, q, v.y);
#endif
  }
  for (int j = whole * VEC + tid; j < count; j += THREADS) add_value(s, q, __ldg(span + j));
#endif

#if FINAL == 0
  __shared__ double block_sum;
  __shared__ double block_sq;
  if (tid == 0) {
    block_sum = 0.0;
    block_sq = 0.0;
  }
  __syncthreads();
  atomicAdd(&block_sum, s);
  atomicAdd(&block_sq, q);
  __syncthreads();
  const double total_s = block_sum, total_q = block_sq;
#else
  __shared__ double warp_s[THREADS / 32];
  __shared__ double warp_q[THREADS / 32];
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    s += __shfl_xor_sync(0xffffffffu, s, off);
    q += __shfl_xor_sync(0xffffffffu, q, off);
  }
  if (tid % 32 == 0) {
    warp_s[tid / 32] = s;
    warp_q[tid / 32] = q;
  }
  __syncthreads();
  double total_s = 0.0, total_q = 0.0;
  if (tid == 0)
    for (int w = 0; w < THREADS / 32; ++w) {
      total_s += warp_s[w];
      total_q += warp_q[w];
    }
#endif
  if (tid == 0) {
    const int slot = blockIdx.x * CHUNKS;
    sums[slot] = (float)total_s;
    sumsq[slot] = (float)total_q;
  }
  // the other slots of the block's chunks that exist: zeros
  const int slots = (n + CHUNK - 1) / CHUNK;
  if (CHUNKS > 1 && tid > 0 && tid < CHUNKS && blockIdx.x * CHUNKS + tid < slots) {
    sums[blockIdx.x * CHUNKS + tid] = 0.0f;
    sumsq[blockIdx.x * CHUNKS + tid] = 0.0f;
  }
}
