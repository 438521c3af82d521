// Symmetric int8 quantization in groups of 128 consecutive values, one warp per group:
//   scale[g] = max|x[g*128 .. g*128+127]| / 127,  q = round(x / scale)
// Launch: grid = (n_groups * 32 + 127) / 128, block = 128 (four warps per block).
#include <cstdint>

// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 128
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 1
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
#if MIN_BLOCKS_PER_SM > 0
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM)
#elif (BLOCK_THREADS) > 256
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS)
#else
#define WB_BLOCK_BOUNDS  // no bounds, as written
#endif

extern "C" __global__ WB_BLOCK_BOUNDS void quant_int8(int8_t* __restrict__ q, float* __restrict__ scales,
                                      const float* __restrict__ x, int n_groups) {
  for (int wb_item_x = 0; wb_item_x < ITEMS_PER_THREAD; ++wb_item_x) {  // items of this thread
  int warp = ((blockIdx.x * ITEMS_PER_THREAD + wb_item_x) * BLOCK_THREADS + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= n_groups) continue;  // next item
  const float* xg = x + (long long)warp * 128;

  float v[4];
  float amax = 0.0f;
  for (int k = 0; k < 4; ++k) {
    v[k] = xg[lane + 32 * k];
    amax = fmaxf(amax, fabsf(v[k]));
  }
  for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  float scale = amax / 127.0f;
  float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (int k = 0; k < 4; ++k) {
    q[(long long)warp * 128 + lane + 32 * k] = (int8_t)__float2int_rn(v[k] * inv);
  }
  if (lane == 0) scales[warp] = scale;
  }
}
