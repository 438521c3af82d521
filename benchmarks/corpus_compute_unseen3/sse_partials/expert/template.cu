// Weighted sum of squared errors to partial sums. Expert parameterization (hand-written):
// block b takes the CHUNK consecutive elements from b * CHUNK (a multiple of the 4096 of the
// kernel as written: fewer, longer blocks); its BLOCK_THREADS threads keep ITEMS independent
// accumulators (ITEMS loads of each input in flight) over VEC-wide loads (float4 when
// VEC = 4, the chunk's last elements past a multiple of 4 loaded alone); FINAL 0 ends with
// a shared-memory tree (as written), 1 with warp shuffles and one shared slot per warp.
// partials has ceil(n / 4096) slots, the kernel's own block count: with longer chunks
// block 0 writes 0 to the slots no block fills, so the host's sum of all of them is right.
// Launch: grid = ceil(n / CHUNK), block = BLOCK_THREADS. Defaults: the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef CHUNK
#define CHUNK 4096
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
#define SLOT_CHUNK 4096  // elements per slot of partials (the kernel as written)

__device__ __forceinline__ float weighted_sq(float p, float t, float wt) {
  const float d = p - t;
  return wt * d * d;
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
sse_partials(float* __restrict__ partials, const float* __restrict__ pred,
             const float* __restrict__ target, const float* __restrict__ w, int n) {
  const int tid = threadIdx.x;
  const int begin = blockIdx.x * CHUNK;
  const int end = min(begin + CHUNK, n);
  float acc[ITEMS];
#pragma unroll
  for (int u = 0; u < ITEMS; ++u) acc[u] = 0.0f;

#if VEC == 4
  // begin is a multiple of 4 (CHUNK is), so the float4 view of the chunk is aligned
  const int nvec = (end - begin) / 4;
  const float4* p4 = reinterpret_cast<const float4*>(pred + begin);
  const float4* t4 = reinterpret_cast<const float4*>(target + begin);
  const float4* w4 = reinterpret_cast<const float4*>(w + begin);
  int j = tid;
  for (; j + (ITEMS - 1) * BLOCK_THREADS < nvec; j += ITEMS * BLOCK_THREADS) {
    float4 p[ITEMS], t[ITEMS], q[ITEMS];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      p[u] = p4[j + u * BLOCK_THREADS];
      t[u] = t4[j + u * BLOCK_THREADS];
      q[u] = w4[j + u * BLOCK_THREADS];
    }
#pragma unroll
    for (int u = 0; u < ITEMS; ++u)
      acc[u] += (weighted_sq(p[u].x, t[u].x, q[u].x) + weighted_sq(p[u].y, t[u].y, q[u].y)) +
                (weighted_sq(p[u].z, t[u].z, q[u].z) + weighted_sq(p[u].w, t[u].w, q[u].w));
  }
  for (; j < nvec; j += BLOCK_THREADS) {
    const float4 p = p4[j], t = t4[j], q = w4[j];
    acc[0] += (weighted_sq(p.x, t.x, q.x) + weighted_sq(p.y, t.y, q.y)) +
              (weighted_sq(p.z, t.z, q.z) + weighted_sq(p.w, t.w, q.w));
  }
  for (int i = begin + nvec * 4 + tid; i < end; i += BLOCK_THREADS)
    acc[0] += weighted_sq(pred[i], target[i], w[i]);
#else
  int i = begin + tid;
  for (; i + (ITEMS - 1) * BLOCK_THREADS < end; i += ITEMS * BLOCK_THREADS) {
    float p[ITEMS], t[ITEMS], q[ITEMS];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      p[u] = pred[i + u * BLOCK_THREADS];
      t[u] = target[i + u * BLOCK_THREADS];
      q[u] = w[i + u * BLOCK_THREADS];
    }
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) acc[u] += weighted_sq(p[u], t[u], q[u]);
  }
  for (; i < end; i += BLOCK_THREADS) acc[0] += weighted_sq(pred[i], target[i], w[i]);
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
    float v = tid < BLOCK_THREADS / 32 ? warp_sums[tid] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (tid == 0) partials[blockIdx.x] = v;
  }
#endif
  if (CHUNK > SLOT_CHUNK && blockIdx.x == 0) {
    const int slots = (n + SLOT_CHUNK - 1) / SLOT_CHUNK;
    for (int b = gridDim.x + tid; b < slots; b += BLOCK_THREADS) partials[b] = 0.0f;
  }
}
