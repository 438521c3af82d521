// int8 -> float dequantization with one scale per group of 64 consecutive values.
// Launch: grid = (n + 255) / 256, block = 256.
#include <cstdint>

// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
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

extern "C" __global__ WB_BLOCK_BOUNDS void dequant_int8(float* __restrict__ out, const int8_t* __restrict__ q,
                                        const float* __restrict__ scales, int n) {
  // int i = blockIdx.x * 256 + threadIdx.x;  (now per item, below)
  {
    const int wb_i0 = (blockIdx.x * (BLOCK_THREADS * ITEMS_PER_THREAD) + threadIdx.x) * VEC;
    WbVec<float, VEC> wb_out[ITEMS_PER_THREAD];
    WbVec<int8_t, VEC> wb_q[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int i = wb_i0 + wb_i * (BLOCK_THREADS) * VEC;
      if (i < n && (VEC == 1 || (n) - i >= VEC)) {
        wb_q[wb_i] = *reinterpret_cast<const WbVec<int8_t, VEC>*>(&q[i]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int i = wb_i0 + wb_i * (BLOCK_THREADS) * VEC;
      if (i < n && (VEC == 1 || (n) - i >= VEC)) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) wb_out[wb_i].v[wb_v] = (float)wb_q[wb_i].v[wb_v] * scales[(i + wb_v) / 64];
        *reinterpret_cast<WbVec<float, VEC>*>(&out[i]) = wb_out[wb_i];
      } else if (i < n) {  // the vector would cross n: one by one
        for (int wb_tail = i; wb_tail < n; ++wb_tail) {
          const int i = wb_tail;
          out[i] = (float)q[i] * scales[i / 64];
        }
      }
    }
  }
}
