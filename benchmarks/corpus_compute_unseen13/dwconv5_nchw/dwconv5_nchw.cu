// out[b, c] = in[b, c] correlated with that channel's own 5 x 5 filter wt[c] (a depthwise
// convolution), NCHW floats, zero padding of two pixels. blockIdx.z is the plane b * ch + c.
// One output pixel per thread on a 32 x 8 block; the filter taps are walked by pointer.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8, nb * ch), block = (32, 8).

extern "C" __global__ void dwconv5_nchw(float* __restrict__ out, const float* __restrict__ in,
                                        const float* __restrict__ wt, int ch, int h, int w) {
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  if (x >= w || y >= h) return;
  const int plane = blockIdx.z;
  const float* src = in + (size_t)plane * h * w;
  const float* tap = wt + (plane % ch) * 25;
  float acc = 0.0f;
#pragma unroll
  for (int dy = -2; dy <= 2; ++dy) {
    const int yy = y + dy;
#pragma unroll
    for (int dx = -2; dx <= 2; ++dx, ++tap) {
      const int xx = x + dx;
      if (yy >= 0 && yy < h && xx >= 0 && xx < w) acc += *tap * src[yy * w + xx];
    }
  }
  out[(size_t)plane * h * w + y * w + x] = acc;
}
