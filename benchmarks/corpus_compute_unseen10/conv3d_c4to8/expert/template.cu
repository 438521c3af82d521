// Zero-padded 3 x 3 x 3 convolution, 4 channels in, 8 out, channel-major volumes.
// Expert parameterization (hand-written): a BX x BY block of threads, each computing ZT
// consecutive output planes of COT output channels at its (y, x) (blockIdx.z: the slab of
// planes and the channel group). A thread walks the ZT + 2 input planes its outputs need
// once per input channel: each plane's 3 x 3 neighbourhood is read once into registers and
// added to every output plane it touches (the dz of a plane is known at compile time), so
// an input value is read 9 (not 27) times per ZT planes. WSMEM 1 stages the block's
// channel group's weights in shared memory (read as broadcasts), 0 reads them through the
// read-only cache. Every sum adds its 108 products in the kernel's order (c, dz, dy, dx).
// Launch: grid = (ceil(width / BX), ceil(height / BY), ceil(depth / ZT) * (8 / COT)),
// block = (BX, BY). Defaults: the kernel as written (16 x 8, a plane and 8 channels).
#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ZT
#define ZT 1
#endif
#ifndef COT
#define COT 8
#endif
#ifndef WSMEM
#define WSMEM 0
#endif
#define C_IN 4
#define C_OUT 8
#define GROUPS (C_OUT / COT)
#define GROUP_WEIGHTS (COT * C_IN * 27)

extern "C" __global__ void __launch_bounds__(BX * BY)
conv3d_c4to8(float* __restrict__ out, const float* __restrict__ in,
             const float* __restrict__ wts, int depth, int height, int width) {
  const int x = blockIdx.x * BX + threadIdx.x;
  const int y = blockIdx.y * BY + threadIdx.y;
  const int group = blockIdx.z % GROUPS;
  const int z0 = (blockIdx.z / GROUPS) * ZT;
  const float* gw = wts + group * GROUP_WEIGHTS;
#if WSMEM
  __shared__ float ws[GROUP_WEIGHTS];
  for (int e = threadIdx.y * BX + threadIdx.x; e < GROUP_WEIGHTS; e += BX * BY) ws[e] = gw[e];
  __syncthreads();
#define WEIGHT(o, tap) ws[(o) * (C_IN * 27) + (tap)]
#else
#define WEIGHT(o, tap) __ldg(gw + (o) * (C_IN * 27) + (tap))
#endif
  if (x >= width || y >= height) return;
  const size_t plane = (size_t)height * width;
  float acc[ZT][COT];
#pragma unroll
  for (int t = 0; t < ZT; ++t)
#pragma unroll
    for (int o = 0; o < COT; ++o) acc[t][o] = 0.0f;
  for (int c = 0; c < C_IN; ++c) {
    const float* ch = in + (size_t)c * depth * plane;
#pragma unroll
    for (int p = 0; p < ZT + 2; ++p) {
      const int zi = z0 + p - 1;
      if (zi < 0 || zi >= depth) continue;
      float v[3][3];
#pragma unroll
      for (int dy = 0; dy < 3; ++dy)
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) {
          const int yi = y + dy - 1, xi = x + dx - 1;
          v[dy][dx] = (yi >= 0 && yi < height && xi >= 0 && xi < width)
                          ? __ldg(ch + (size_t)zi * plane + (size_t)yi * width + xi) : 0.0f;
        }
#pragma unroll
      for (int t = 0; t < ZT; ++t) {
        const int dz = p - t;  // the tap this plane is for output plane z0 + t
        if (dz < 0 || dz > 2) continue;
#pragma unroll
        for (int dy = 0; dy < 3; ++dy)
#pragma unroll
          for (int dx = 0; dx < 3; ++dx) {
            const int tap = ((c * 3 + dz) * 3 + dy) * 3 + dx;
#pragma unroll
            for (int o = 0; o < COT; ++o) acc[t][o] += WEIGHT(o, tap) * v[dy][dx];
          }
      }
    }
  }
#pragma unroll
  for (int t = 0; t < ZT; ++t) {
    const int z = z0 + t;
    if (z >= depth) break;
#pragma unroll
    for (int o = 0; o < COT; ++o)
      out[((size_t)(group * COT + o) * depth + z) * plane + (size_t)y * width + x] = acc[t][o];
  }
}
