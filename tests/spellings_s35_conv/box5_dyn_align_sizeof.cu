// The aligned 5 x 5 box filter respelled: the dynamic buffer aligned for float4
// (`__align__(sizeof(float4))`), the tile a const pointer at offset 0, unsigned thread
// indices, `< 2 * R + 1` window bounds, the mean by a division.
#define R 2
#define B 16
#define W (B + 2 * R)

extern "C" __global__ void box_blur(float* dst, const float* src, int height, int width) {
  extern __shared__ __align__(sizeof(float4)) float raw[];
  float* const tile = raw + 0;
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const int gx = blockIdx.x * B + tx;
  const int gy = blockIdx.y * B + ty;
  for (unsigned py = ty; py < W; py += B)
    for (unsigned px = tx; px < W; px += B) {
      const int sy = min(max((int)(blockIdx.y * B + py) - R, 0), height - 1);
      const int sx = min(max((int)(blockIdx.x * B + px) - R, 0), width - 1);
      tile[py * W + px] = src[sy * width + sx];
    }
  __syncthreads();
  if (gx >= width || gy >= height) return;
  float s = 0.0f;
  for (int dy = 0; dy < 2 * R + 1; ++dy)
    for (int dx = 0; dx < 2 * R + 1; ++dx) s += tile[(ty + dy) * W + tx + dx];
  dst[gy * width + gx] = s / 25.0f;
}
