// out [cols, rows] = transpose of in [rows, cols] (float), through a 32x32 shared tile.
// Launch: grid = ((cols + 31) / 32, (rows + 31) / 32), block = (32, 8).
// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef BLOCK_ORDER
#define BLOCK_ORDER 0
#endif
#ifndef SWIZZLE_GROUP
#define SWIZZLE_GROUP 8
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
#if MIN_BLOCKS_PER_SM > 0
#define WB_BLOCK_BOUNDS __launch_bounds__(TILE * BLOCK_ROWS, MIN_BLOCKS_PER_SM)
#elif (TILE * BLOCK_ROWS) > 256
#define WB_BLOCK_BOUNDS __launch_bounds__(TILE * BLOCK_ROWS)
#else
#define WB_BLOCK_BOUNDS  // no bounds, as written
#endif
extern "C" __global__ WB_BLOCK_BOUNDS void transpose(float* __restrict__ out, const float* __restrict__ in,
                                     int rows, int cols) {
  // block order: 0 row-major, 1 diagonal, 2 grouped swizzle (a bijection of the grid)
  unsigned wb_bx = blockIdx.x, wb_by = blockIdx.y;
  if (BLOCK_ORDER == 1) {
    const unsigned bid = blockIdx.x + gridDim.x * blockIdx.y;
    wb_by = bid % gridDim.y;
    wb_bx = (bid / gridDim.y + wb_by) % gridDim.x;
  } else if (BLOCK_ORDER == 2) {
    const unsigned bid = blockIdx.x + gridDim.x * blockIdx.y;
    const unsigned per_group = SWIZZLE_GROUP * gridDim.x;
    const unsigned first = bid / per_group * SWIZZLE_GROUP;
    const unsigned rows = min(gridDim.y - first, (unsigned)SWIZZLE_GROUP);
    wb_by = first + bid % per_group % rows;
    wb_bx = bid % per_group / rows;
  }

  __shared__ float tile[TILE][TILE + PAD];
  int x = wb_bx * TILE + threadIdx.x;
  int y = wb_by * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  }
  __syncthreads();
  int x_2 = wb_by * TILE + threadIdx.x;
  int y_2 = wb_bx * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    if (x_2 < rows && y_2 + j < cols) out[(y_2 + j) * rows + x_2] = tile[threadIdx.x][threadIdx.y + j];
  }
}
