// Count the elements of x in [BAND_LO, BAND_HI), one count per block. Expert
// parameterization (hand-written): a block owns CHUNKS consecutive chunks of 4096 elements
// (fewer, larger blocks); THREADS threads stride through them, VEC floats per load (4: a
// 16-byte load, the tail past the last whole group one at a time). FINAL 0 adds the
// threads' counts with atomicAdd on one shared counter (as written); 1 adds them inside each
// warp with shuffles, then one atomicAdd per warp. counts has one slot per 4096 elements, the
// grid as written: block 0 writes 0 to the slots past the grid, so the host's sum of all
// slots is right.
// Launch: grid = ceil(n / (4096 * CHUNKS)), block = THREADS. Defaults: the kernel as written.
#ifndef CHUNKS
#define CHUNKS 1
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef FINAL
#define FINAL 0
#endif
#define SLOT 4096  // elements per count slot: the chunk of the kernel as written
#define SPAN (SLOT * CHUNKS)
#define BAND_LO -0.5f
#define BAND_HI 1.25f

__device__ __forceinline__ int in_band(float v) { return (v >= BAND_LO && v < BAND_HI) ? 1 : 0; }

extern "C" __global__ void __launch_bounds__(THREADS, 1)
band_count(int* __restrict__ counts, const float* __restrict__ x, int n) {
  __shared__ int block_total;
  const int tid = threadIdx.x;
  if (tid == 0) block_total = 0;
  __syncthreads();
  const float* span = x + (size_t)blockIdx.x * SPAN;
  const int len = min(SPAN, n - (int)blockIdx.x * SPAN);
  int mine = 0;
#if VEC == 4
  // a span starts at a multiple of 4096 floats: 16-byte aligned
  const float4* span4 = reinterpret_cast<const float4*>(span);
  const int groups = len / 4;
  for (int g = tid; g < groups; g += THREADS) {
    const float4 v = __ldg(span4 + g);
    mine += in_band(v.x) + in_band(v.y) + in_band(v.z) + in_band(v.w);
  }
  for (int i = groups * 4 + tid; i < len; i += THREADS) mine += in_band(__ldg(span + i));
#else
  for (int i = tid; i < len; i += THREADS) mine += in_band(__ldg(span + i));
#endif
#if FINAL == 0
  atomicAdd(&block_total, mine);
#else
#pragma unroll
  for (int off = 16; off > 0; off /= 2) mine += __shfl_xor_sync(0xffffffffu, mine, off);
  if (tid % 32 == 0) atomicAdd(&block_total, mine);
#endif
  __syncthreads();
  if (tid == 0) counts[blockIdx.x] = block_total;
  if (CHUNKS > 1 && blockIdx.x == 0) {
    const int slots = (n + SLOT - 1) / SLOT;
    for (int b = gridDim.x + tid; b < slots; b += THREADS) counts[b] = 0;
  }
}
