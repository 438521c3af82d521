// 5-point Jacobi step on an h x w float grid; the boundary is copied through.
// Launch: grid = ((w + 15) / 16, (h + 15) / 16), block = (16, 16).
// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#ifndef ITEMS_X
#define ITEMS_X 1
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS_PER_SM) stencil5(float* __restrict__ out, const float* __restrict__ in,
                                    int h, int w) {
  for (int wb_item_x = 0; wb_item_x < ITEMS_X; ++wb_item_x) {  // items of this thread
  int x = (blockIdx.x * ITEMS_X + wb_item_x) * BLOCK_X + threadIdx.x;
  for (int wb_item_y = 0; wb_item_y < ITEMS_Y; ++wb_item_y) {  // items of this thread
  int y = (blockIdx.y * ITEMS_Y + wb_item_y) * BLOCK_Y + threadIdx.y;
  if (x >= w || y >= h) continue;  // next item
  int i = y * w + x;
  if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
    out[i] = in[i];
  } else {
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
  }
  }
  }
}
