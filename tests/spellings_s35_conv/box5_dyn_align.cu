// A 5 x 5 box filter (edges clamped) whose block stages its patch with a 2-pixel apron in
// dynamic shared memory, declared 16-byte aligned; launched with (16 + 4) * (16 + 4)
// floats of it (the tile a pointer to the buffer's start).
#define RADIUS 2
#define BS 16
#define TW (BS + 2 * RADIUS)

extern "C" __global__ void box_blur(float* dst, const float* src, int height, int width) {
  extern __shared__ __align__(16) float smem[];
  float *tile = smem;  // TW x TW
  int gx = blockIdx.x * BS + threadIdx.x;
  int gy = blockIdx.y * BS + threadIdx.y;
  for (int py = threadIdx.y; py < TW; py += BS) {
    for (int px = threadIdx.x; px < TW; px += BS) {
      int sy = min(max((int)(blockIdx.y * BS) + py - RADIUS, 0), height - 1);
      int sx = min(max((int)(blockIdx.x * BS) + px - RADIUS, 0), width - 1);
      tile[py * TW + px] = src[sy * width + sx];
    }
  }
  __syncthreads();
  if (gx >= width || gy >= height) return;
  float s = 0.0f;
  for (int dy = 0; dy <= 2 * RADIUS; ++dy)
    for (int dx = 0; dx <= 2 * RADIUS; ++dx) s += tile[(threadIdx.y + dy) * TW + threadIdx.x + dx];
  dst[gy * width + gx] = s * (1.0f / ((2 * RADIUS + 1) * (2 * RADIUS + 1)));
}
