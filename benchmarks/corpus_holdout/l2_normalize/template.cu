// Rows of x [rows, d] scaled to unit L2 norm: out = x / max(||x||, 1e-12).
// Launch: grid = rows, block = 512.
// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 512
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 1
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
template <typename T, int N>
struct alignas(sizeof(T) * N) WbVec {  // N elements moved as one aligned access
  T v[N];
};
#if MIN_BLOCKS_PER_SM > 0
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM)
#elif (BLOCK_THREADS) > 256
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS)
#else
#define WB_BLOCK_BOUNDS  // no bounds, as written
#endif
extern "C" __global__ WB_BLOCK_BOUNDS void l2_normalize(float* __restrict__ out, const float* __restrict__ x,
                                        int d) {
  __shared__ float acc[BLOCK_THREADS];
  const float* xr = x + (long long)blockIdx.x * d;
  float s = 0.0f;
  for (int wb_j0 = (threadIdx.x) * VEC; wb_j0 < d; wb_j0 += (BLOCK_THREADS) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_xr[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * (BLOCK_THREADS) * VEC;
      if (j < d) {
        wb_xr[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&xr[j]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * (BLOCK_THREADS) * VEC;
      if (j < d) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) s += wb_xr[wb_i].v[wb_v] * wb_xr[wb_i].v[wb_v];
      }
    }
  }
  acc[threadIdx.x] = s;
  __syncthreads();
  for (int k = (BLOCK_THREADS / 2); k > 0; k >>= 1) {
    if (threadIdx.x < k) acc[threadIdx.x] += acc[threadIdx.x + k];
    __syncthreads();
  }
  float inv = 1.0f / fmaxf(sqrtf(acc[0]), 1e-12f);
  for (int wb_j0 = (threadIdx.x) * VEC; wb_j0 < d; wb_j0 += (BLOCK_THREADS) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_out[ITEMS_PER_THREAD];
    WbVec<float, VEC> wb_xr[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * (BLOCK_THREADS) * VEC;
      if (j < d) {
        wb_xr[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&xr[j]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * (BLOCK_THREADS) * VEC;
      if (j < d) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) wb_out[wb_i].v[wb_v] = wb_xr[wb_i].v[wb_v] * inv;
        *reinterpret_cast<WbVec<float, VEC>*>(&out[(long long)blockIdx.x * d + j]) = wb_out[wb_i];
      }
    }
  }
}
