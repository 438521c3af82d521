// Partial log-sum-exp pairs (max, sum of exp(x - max)) for a 512-slot pair buffer. Expert
// parameterization (hand-written): BLOCKS blocks (at most the 512 slots; the slots past
// the grid get the neutral pair (LOWEST, 0), which no merge notices) of THREADS threads walk
// x in VEC-float vectors (1: as written; 2: float2; 4: float4; the buffer starts aligned
// and the last n % VEC floats are read one at a time), UNROLL vectors a thread loaded before
// any is folded (more loads in flight), each vector folded with one rescale at most (its
// max first), then merge the block's pairs with a shared-memory tree (FINAL 0, as written)
// or warp shuffles and one shared pair per warp (FINAL 1). The merged log-sum-exp does
// not depend on the split beyond float rounding, and the max is exact in every config.
// Launch: grid = BLOCKS, block = THREADS. Defaults: the kernel as written.
#ifndef BLOCKS
#define BLOCKS 512
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
#define SLOTS 512
#define LOWEST -3.0e38f

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  s = s * expf(m - mx) + s2 * expf(m2 - mx);
  m = mx;
}

// fold VEC elements into (m, s): rescale once to the larger of m and their max, then add
__device__ __forceinline__ void fold(float& m, float& s, vec_t v) {
  const float* e = reinterpret_cast<const float*>(&v);
  float top = e[0];
#pragma unroll
  for (int k = 1; k < VEC; ++k) top = fmaxf(top, e[k]);
  if (top > m) {
    s *= expf(m - top);
    m = top;
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) s += expf(e[k] - m);
}

extern "C" __global__ void __launch_bounds__(THREADS)
lse_partials(float* __restrict__ pmax, float* __restrict__ psum, const float* __restrict__ x,
             int n) {
  const vec_t* xv = reinterpret_cast<const vec_t*>(x);
  const long long whole = n / VEC;
  const long long stride = (long long)BLOCKS * THREADS;
  const long long gid = (long long)blockIdx.x * THREADS + threadIdx.x;
  float m = LOWEST, s = 0.0f;
  long long g = gid;
  for (; g + (UNROLL - 1) * stride < whole; g += UNROLL * stride) {
    vec_t v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(xv + g + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) fold(m, s, v[u]);
  }
  for (; g < whole; g += stride) fold(m, s, __ldg(xv + g));
  // the floats past the last whole vector
  const long long tail = whole * VEC + gid;
  if (tail < n) {
    const float v = __ldg(x + tail);
    merge(m, s, v, 1.0f);
  }

#if FINAL == 0
  __shared__ float sm[THREADS], ss[THREADS];
  const int t = threadIdx.x;
  sm[t] = m;
  ss[t] = s;
  __syncthreads();
  for (int stride2 = THREADS / 2; stride2 > 0; stride2 /= 2) {
    if (t < stride2) merge(sm[t], ss[t], sm[t + stride2], ss[t + stride2]);
    __syncthreads();
  }
  const float block_m = sm[0], block_s = ss[0];
#else
  __shared__ float wm[THREADS / 32], ws[THREADS / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    merge(m, s, m2, s2);
  }
  if (threadIdx.x % 32 == 0) {
    wm[threadIdx.x / 32] = m;
    ws[threadIdx.x / 32] = s;
  }
  __syncthreads();
  float block_m = wm[0], block_s = ws[0];
  for (int w = 1; w < THREADS / 32; ++w) merge(block_m, block_s, wm[w], ws[w]);
#endif
  if (threadIdx.x == 0) {
    pmax[blockIdx.x] = block_m;
    psum[blockIdx.x] = block_s;
    for (int slot = BLOCKS + blockIdx.x; slot < SLOTS; slot += BLOCKS) {
      pmax[slot] = LOWEST;
      psum[slot] = 0.0f;
    }
  }
}
