// SwiGLU: out[t, j] = silu(in[t, j]) * in[t, d + j] for in [tokens, 2*d] bf16.
// Launch: grid = tokens, block = 256 (one block per token).
#include <cuda_bf16.h>

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
#ifndef ROW_SPLIT
#define ROW_SPLIT 1
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

extern "C" __global__ WB_BLOCK_BOUNDS void silu_mul(__nv_bfloat16* __restrict__ out,
                                    const __nv_bfloat16* __restrict__ in, int d) {
  int row = blockIdx.x;
  for (int wb_j0 = (threadIdx.x + blockIdx.y * (BLOCK_THREADS)) * VEC; wb_j0 < d; wb_j0 += ((BLOCK_THREADS) * ROW_SPLIT) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<__nv_bfloat16, VEC> wb_in[ITEMS_PER_THREAD];
    WbVec<__nv_bfloat16, VEC> wb_in1[ITEMS_PER_THREAD];
    WbVec<__nv_bfloat16, VEC> wb_out[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * ((BLOCK_THREADS) * ROW_SPLIT) * VEC;
      if (j < d) {
        wb_in[wb_i] = *reinterpret_cast<const WbVec<__nv_bfloat16, VEC>*>(&in[row * 2 * d + j]);
        wb_in1[wb_i] = *reinterpret_cast<const WbVec<__nv_bfloat16, VEC>*>(&in[row * 2 * d + d + j]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * ((BLOCK_THREADS) * ROW_SPLIT) * VEC;
      if (j < d) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) {
    float g = __bfloat162float(wb_in[wb_i].v[wb_v]);
    float u = __bfloat162float(wb_in1[wb_i].v[wb_v]);
    wb_out[wb_i].v[wb_v] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
  }
        *reinterpret_cast<WbVec<__nv_bfloat16, VEC>*>(&out[row * d + j]) = wb_out[wb_i];
      }
    }
  }
}
