// dst = 5x5 box blur of src (height x width floats), edges clamped (the nearest pixel
// repeats). Each 16x16 block stages its patch with a 2-pixel apron in shared memory.
// Launch: grid = ((width + 15) / 16, (height + 15) / 16), block = (16, 16).
#define RADIUS 2
#define BS 16

extern "C" __global__ void box_blur(float* dst, const float* src, int height, int width) {
  __shared__ float patch[BS + 2 * RADIUS][BS + 2 * RADIUS];
  int gx = blockIdx.x * BS + threadIdx.x;
  int gy = blockIdx.y * BS + threadIdx.y;
  for (int py = threadIdx.y; py < BS + 2 * RADIUS; py += BS) {
    for (int px = threadIdx.x; px < BS + 2 * RADIUS; px += BS) {
      int sy = min(max((int)(blockIdx.y * BS) + py - RADIUS, 0), height - 1);
      int sx = min(max((int)(blockIdx.x * BS) + px - RADIUS, 0), width - 1);
      patch[py][px] = src[sy * width + sx];
    }
  }
  __syncthreads();
  if (gx >= width || gy >= height) return;
  float s = 0.0f;
  for (int dy = 0; dy <= 2 * RADIUS; ++dy)
    for (int dx = 0; dx <= 2 * RADIUS; ++dx) s += patch[threadIdx.y + dy][threadIdx.x + dx];
  dst[gy * width + gx] = s * (1.0f / ((2 * RADIUS + 1) * (2 * RADIUS + 1)));
}
