// out[f] = 7 x 7 zero-padded correlation of one image [H, W] with each of four filters
// (filt [4, 7, 7]), out [4, H, W]. A block stages its 22 x 22 window (16 x 16 outputs and
// a halo of 3) in a flat shared array, then each thread sums the 49 taps for all four
// filters at its pixel.
// Launch: grid = ((W + 15) / 16, (H + 15) / 16), block = (16, 16).

#define BS 16
#define R 3
#define WIN (BS + 2 * R)
#define NF 4
#define TAPS ((2 * R + 1) * (2 * R + 1))
#define AT(y, x) tile[(y) * WIN + (x)]

extern "C" __global__ void corr7x7_bank4(float* __restrict__ out, const float* __restrict__ img,
                                         const float* __restrict__ filt, int H, int W) {
  __shared__ float tile[WIN * WIN];
  __shared__ float taps[NF * TAPS];
  const int tid = threadIdx.y * BS + threadIdx.x;
  const int y0 = blockIdx.y * BS - R, x0 = blockIdx.x * BS - R;
  int e = tid;
  while (e < WIN * WIN) {
    const int gy = y0 + e / WIN, gx = x0 + e % WIN;
    tile[e] = (gy >= 0 && gy < H && gx >= 0 && gx < W) ? img[(size_t)gy * W + gx] : 0.0f;
    e += BS * BS;
  }
  if (tid < NF * TAPS) taps[tid] = filt[tid];
  __syncthreads();
  const int y = blockIdx.y * BS + threadIdx.y, x = blockIdx.x * BS + threadIdx.x;
  if (y >= H || x >= W) return;
  float acc[NF] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int dy = 0; dy < 2 * R + 1; ++dy)
    for (int dx = 0; dx < 2 * R + 1; ++dx) {
      const float v = AT(threadIdx.y + dy, threadIdx.x + dx);
      for (int f = 0; f < NF; ++f) acc[f] += taps[f * TAPS + dy * (2 * R + 1) + dx] * v;
    }
  for (int f = 0; f < NF; ++f) out[((size_t)f * H + y) * W + x] = acc[f];
}
