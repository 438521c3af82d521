// Depthwise 3 x 3 convolution of a channels-last [h, w, 32] image, per-channel taps and
// biases in constant memory, zero padding. Expert parameterization (hand-written): a 1-D
// block of (32 / VEC) * PIX threads; a thread owns VEC neighbouring channels (one float,
// float2 or float4 load a pixel) of ITEMS_X consecutive pixels in each of ITEMS_Y
// consecutive rows. It walks the ITEMS_Y + 2 input rows once, holding a window of
// ITEMS_X + 2 pixels of a row in registers that feeds every output it touches (a pixel is
// loaded once per thread, not up to 9 times). USE_SMEM 1 first stages the block's input tile
// with its one-pixel apron (all channels) in shared memory; 0 reads global memory. TAPS 1
// copies the taps to shared memory once per block (the lanes of a warp read different
// channels' taps, which constant memory serves one address at a time); 0 reads them from
// constant memory (as written).
// Launch: grid = (ceil(w / (PIX * ITEMS_X)), ceil(h / ITEMS_Y)), block = (32 / VEC) * PIX.
// Defaults: the kernel as written (a channel of a pixel a thread, 8 pixels a block).
#ifndef VEC
#define VEC 1
#endif
#ifndef PIX
#define PIX 8
#endif
#ifndef ITEMS_X
#define ITEMS_X 1
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#ifndef TAPS
#define TAPS 0
#endif
#define CHANNELS 32
#define GROUPS (CHANNELS / VEC)
#define NTHREADS (GROUPS * PIX)
#define TILE_W (PIX * ITEMS_X)

__constant__ float taps[9 * CHANNELS];  // [dy + 1][dx + 1][c]
__constant__ float bias[CHANNELS];

// VEC channels from c0 of pixel (y, x), zeros outside the image (c0 is a multiple of VEC and
// a pixel is 128 bytes: the vector load is aligned).
__device__ __forceinline__ void load_pixel(float (&v)[VEC], const float* __restrict__ in,
                                           int y, int x, int c0, int h, int w) {
  if (y < 0 || y >= h || x < 0 || x >= w) {
#pragma unroll
    for (int q = 0; q < VEC; ++q) v[q] = 0.0f;
    return;
  }
  const float* p = in + ((size_t)y * w + x) * CHANNELS + c0;
#if VEC == 4
  const float4 t = __ldg(reinterpret_cast<const float4*>(p));
  v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
#elif VEC == 2
  const float2 t = __ldg(reinterpret_cast<const float2*>(p));
  v[0] = t.x; v[1] = t.y;
#else
  v[0] = __ldg(p);
#endif
}

extern "C" __global__ void __launch_bounds__(NTHREADS, 1)
dwconv3_nhwc(float* __restrict__ out, const float* __restrict__ in, int h, int w) {
  const int g = threadIdx.x % GROUPS, p = threadIdx.x / GROUPS;
  const int c0 = g * VEC;
  const int xb = blockIdx.x * TILE_W, yb = blockIdx.y * ITEMS_Y;
  const int x0 = xb + p * ITEMS_X;
#if TAPS
  __shared__ float tap_s[9 * CHANNELS];
  for (int e = threadIdx.x; e < 9 * CHANNELS; e += NTHREADS) tap_s[e] = taps[e];
#define TAP(i) tap_s[i]
#else
#define TAP(i) taps[i]
#endif
#if USE_SMEM
  __shared__ float tile[ITEMS_Y + 2][TILE_W + 2][CHANNELS];
  for (int e = threadIdx.x; e < (ITEMS_Y + 2) * (TILE_W + 2) * GROUPS; e += NTHREADS) {
    const int gg = e % GROUPS, rest = e / GROUPS;
    const int tx = rest % (TILE_W + 2), ty = rest / (TILE_W + 2);
    float v[VEC];
    load_pixel(v, in, yb + ty - 1, xb + tx - 1, gg * VEC, h, w);
#pragma unroll
    for (int q = 0; q < VEC; ++q) tile[ty][tx][gg * VEC + q] = v[q];
  }
#endif
#if TAPS || USE_SMEM
  __syncthreads();
#endif
  float acc[ITEMS_Y][ITEMS_X][VEC];
#pragma unroll
  for (int v = 0; v < ITEMS_Y; ++v)
#pragma unroll
    for (int u = 0; u < ITEMS_X; ++u)
#pragma unroll
      for (int q = 0; q < VEC; ++q) acc[v][u][q] = bias[c0 + q];

#pragma unroll
  for (int r = 0; r < ITEMS_Y + 2; ++r) {  // input row yb + r - 1
    float win[ITEMS_X + 2][VEC];
#pragma unroll
    for (int j = 0; j < ITEMS_X + 2; ++j) {
#if USE_SMEM
#pragma unroll
      for (int q = 0; q < VEC; ++q) win[j][q] = tile[r][p * ITEMS_X + j][c0 + q];
#else
      load_pixel(win[j], in, yb + r - 1, x0 + j - 1, c0, h, w);
#endif
    }
#pragma unroll
    for (int v = 0; v < ITEMS_Y; ++v) {
      const int dy = r - v;  // the tap row this input row is for output row v
      if (dy < 0 || dy > 2) continue;
#pragma unroll
      for (int dx = 0; dx < 3; ++dx)
#pragma unroll
        for (int u = 0; u < ITEMS_X; ++u)
#pragma unroll
          for (int q = 0; q < VEC; ++q)
            acc[v][u][q] += win[u + dx][q] * TAP((dy * 3 + dx) * CHANNELS + c0 + q);
    }
  }
#pragma unroll
  for (int v = 0; v < ITEMS_Y; ++v) {
    const int y = yb + v;
#pragma unroll
    for (int u = 0; u < ITEMS_X; ++u) {
      const int x = x0 + u;
      if (y >= h || x >= w) continue;
      float* o = out + ((size_t)y * w + x) * CHANNELS + c0;
#if VEC == 4
      *reinterpret_cast<float4*>(o) = make_float4(acc[v][u][0], acc[v][u][1], acc[v][u][2],
                                                  acc[v][u][3]);
#elif VEC == 2
      *reinterpret_cast<float2*>(o) = make_float2(acc[v][u][0], acc[v][u][1]);
#else
      *o = acc[v][u][0];
#endif
    }
  }
}
