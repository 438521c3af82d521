// Column sums of x [rows, cols] (float): one thread per column walks down the rows.
// Launch: grid = (cols + 255) / 256, block = 256.
// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef WALK_SPLIT
#define WALK_SPLIT 1
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 1
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
#if MIN_BLOCKS_PER_SM > 0
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS * WALK_SPLIT, MIN_BLOCKS_PER_SM)
#elif (BLOCK_THREADS * WALK_SPLIT) > 256
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS * WALK_SPLIT)
#else
#define WB_BLOCK_BOUNDS  // no bounds, as written
#endif
extern "C" __global__ WB_BLOCK_BOUNDS void col_sum(float* __restrict__ out, const float* __restrict__ x,
                                   int rows, int cols) {
  for (int wb_item_x = 0; wb_item_x < ITEMS_PER_THREAD; ++wb_item_x) {  // items of this thread
  int c = (blockIdx.x * ITEMS_PER_THREAD + wb_item_x) * BLOCK_THREADS + (threadIdx.x / WALK_SPLIT);
  if (c >= cols) continue;  // next item
  float s = 0.0f;
  for (int r = (0) + (int)(threadIdx.x % WALK_SPLIT); r < rows; r += WALK_SPLIT) s += x[(long long)r * cols + c];
  for (int wb_lane = WALK_SPLIT / 2; wb_lane > 0; wb_lane /= 2)  // the group's partial sums
    s += __shfl_xor_sync((0xffffffffu >> (32 - WALK_SPLIT)) << ((threadIdx.x & 31u) & ~((unsigned)WALK_SPLIT - 1u)), s, wb_lane);
  if (threadIdx.x % WALK_SPLIT == 0) {  // the group's first lane
  out[c] = s;
  }
  }
}
