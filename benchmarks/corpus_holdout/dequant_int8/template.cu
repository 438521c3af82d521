// int8 -> float dequantization with one scale per group of 64 consecutive values.
// Launch: grid = (n + 255) / 256, block = 256.
#include <cstdint>

// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 1
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM) dequant_int8(float* __restrict__ out, const int8_t* __restrict__ q,
                                        const float* __restrict__ scales, int n) {
  for (int wb_item_x = 0; wb_item_x < ITEMS_PER_THREAD; ++wb_item_x) {  // items of this thread
  int i = (blockIdx.x * ITEMS_PER_THREAD + wb_item_x) * BLOCK_THREADS + threadIdx.x;
  if (i < n) out[i] = (float)q[i] * scales[i / 64];
  }
}
