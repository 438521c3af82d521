// out[r, c] = max(x[r, c] + bias[c], 0) for x [rows, cols] (float).
// Launch: grid = rows, block = 128.
// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 128
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
extern "C" __global__ WB_BLOCK_BOUNDS void bias_relu(float* __restrict__ out, const float* __restrict__ x,
                                     const float* __restrict__ bias, int cols) {
  long long base = (long long)blockIdx.x * cols;
  for (int wb_c0 = (threadIdx.x + blockIdx.y * (BLOCK_THREADS)) * VEC; wb_c0 < cols; wb_c0 += ((BLOCK_THREADS) * ROW_SPLIT) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_out[ITEMS_PER_THREAD];
    WbVec<float, VEC> wb_x[ITEMS_PER_THREAD];
    WbVec<float, VEC> wb_bias[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * ((BLOCK_THREADS) * ROW_SPLIT) * VEC;
      if (c < cols) {
        wb_x[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&x[base + c]);
        wb_bias[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&bias[c]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * ((BLOCK_THREADS) * ROW_SPLIT) * VEC;
      if (c < cols) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) {
    wb_out[wb_i].v[wb_v] = fmaxf(wb_x[wb_i].v[wb_v] + wb_bias[wb_i].v[wb_v], 0.0f);
  }
        *reinterpret_cast<WbVec<float, VEC>*>(&out[base + c]) = wb_out[wb_i];
      }
    }
  }
}
