// Embedding lookup: out[t, :] = table[ids[t], :] for table [vocab, d] (float).
// Launch: grid = tokens, block = 256.
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
extern "C" __global__ WB_BLOCK_BOUNDS void embedding(float* __restrict__ out, const float* __restrict__ table,
                                     const int* __restrict__ ids, int d) {
  int t = blockIdx.x;
  int id = ids[t];
  for (int wb_j0 = (threadIdx.x + blockIdx.y * (BLOCK_THREADS)) * VEC; wb_j0 < d; wb_j0 += ((BLOCK_THREADS) * ROW_SPLIT) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_out[ITEMS_PER_THREAD];
    WbVec<float, VEC> wb_table[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * ((BLOCK_THREADS) * ROW_SPLIT) * VEC;
      if (j < d) {
        wb_table[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&table[(long long)id * d + j]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int j = wb_j0 + wb_i * ((BLOCK_THREADS) * ROW_SPLIT) * VEC;
      if (j < d) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) {
    wb_out[wb_i].v[wb_v] = wb_table[wb_i].v[wb_v];
  }
        *reinterpret_cast<WbVec<float, VEC>*>(&out[(long long)t * d + j]) = wb_out[wb_i];
      }
    }
  }
}
