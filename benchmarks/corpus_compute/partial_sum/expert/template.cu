// Sum of a float array to one partial sum per block. Expert parameterization (hand-
// written): GRID_BLOCKS blocks of BLOCK_THREADS threads; each thread keeps ITEMS
// independent accumulators over a grid-stride loop of VEC-wide loads (float4 when
// VEC = 4, the n % 4 tail added by the first threads); FINAL 0 ends with a shared-memory
// tree (as written), 1 with warp shuffles and one shared slot per warp.
// partials holds CAPACITY (1024, the kernel's own block count) slots: with fewer blocks
// the first block writes 0 to the unused ones, so the host's sum of all of them is right.
// Launch: grid = GRID_BLOCKS, block = BLOCK_THREADS. Defaults: the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef GRID_BLOCKS
#define GRID_BLOCKS 1024
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef FINAL
#define FINAL 0
#endif
#define CAPACITY 1024

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
partial_sum(float* __restrict__ partials, const float* __restrict__ x, int n) {
  const int tid = threadIdx.x;
  const int stride = BLOCK_THREADS * GRID_BLOCKS;
  const int g = blockIdx.x * BLOCK_THREADS + tid;
  float acc[ITEMS];
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) acc[u] = 0.0f;

#if VEC == 4
  const int nv = n / 4;
  const float4* xv = reinterpret_cast<const float4*>(x);
  int i = g;
  for (; i + (ITEMS - 1) * stride < nv; i += ITEMS * stride) {
    float4 v[ITEMS];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) v[u] = xv[i + u * stride];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < nv; i += stride) {
    const float4 v = xv[i];
    acc[0] += (v.x + v.y) + (v.z + v.w);
  }
  if (g < n - nv * 4) acc[0] += x[nv * 4 + g];
#else
  int i = g;
  for (; i + (ITEMS - 1) * stride < n; i += ITEMS * stride) {
    float v[ITEMS];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) v[u] = x[i + u * stride];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) acc[u] += v[u];
  }
  for (; i < n; i += stride) acc[0] += x[i];
#endif
  float s = acc[0];
#pragma unroll
  for (int u = 1; u < ITEMS; ++u) s += acc[u];

#if FINAL == 0
  __shared__ float buf[BLOCK_THREADS];
  buf[tid] = s;
  __syncthreads();
  for (int k = BLOCK_THREADS / 2; k > 0; k >>= 1) {
    if (tid < k) buf[tid] += buf[tid + k];
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = buf[0];
#else
  __shared__ float warp_sums[BLOCK_THREADS / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  if (tid % 32 == 0) warp_sums[tid / 32] = s;
  __syncthreads();
  if (tid < 32) {
    float w = tid < BLOCK_THREADS / 32 ? warp_sums[tid] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) w += __shfl_down_sync(0xffffffffu, w, off);
    if (tid == 0) partials[blockIdx.x] = w;
  }
#endif
  if (GRID_BLOCKS < CAPACITY && blockIdx.x == 0) {
    for (int b = GRID_BLOCKS + tid; b < CAPACITY; b += BLOCK_THREADS) partials[b] = 0.0f;
  }
}
