// Grey-scale dilation: out[y][x] = max of in over the 5 x 5 window centred on (y, x), the
// window cut to the image at its borders. A 16 x 16 block stages its 20 x 20 window in a
// shared tile (cells outside the image hold a value below any pixel); one pixel a thread.
// Launch: grid = ((W + 15) / 16, (H + 15) / 16), block = (16, 16).

enum { TW = 16, TH = 16, R = 2 };

#define LOWEST (-3.0e38f)

extern "C" __global__ void dilate5_tile(float* __restrict__ out, const float* __restrict__ in,
                                        int H, int W) {
  __shared__ float tile[TH + 2 * R][TW + 2 * R];
  const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
  const int tid = threadIdx.y * TW + threadIdx.x;
  for (int k = tid; k < (TH + 2 * R) * (TW + 2 * R); k += TW * TH) {
    const int ty = k / (TW + 2 * R), tx = k % (TW + 2 * R);
    const int gy = y0 + ty - R, gx = x0 + tx - R;
    tile[ty][tx] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? in[(size_t)gy * W + gx] : LOWEST;
  }
  __syncthreads();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (x >= W || y >= H) return;
  float m = LOWEST;
#pragma unroll
  for (int dy = 0; dy <= 2 * R; ++dy)
#pragma unroll
    for (int dx = 0; dx <= 2 * R; ++dx) m = fmaxf(m, tile[threadIdx.y + dy][threadIdx.x + dx]);
  out[(size_t)y * W + x] = m;
}
