// A 3 x 3 filter in __constant__ memory over the interior of a padded (h + 2) x (w + 2)
// grid, a 16 x 16 block of outputs written into the index, no bounds test.
__constant__ float wt[9];
extern "C" __global__ void k(float* out, const float* in, int h, int w) {
  const int x = blockIdx.x * 16 + threadIdx.x;
  const int y = blockIdx.y * 16 + threadIdx.y;
  const int p = w + 2;
  float acc = 0.0f;
  for (int dy = 0; dy < 3; ++dy)
    for (int dx = 0; dx < 3; ++dx)
      acc += wt[dy * 3 + dx] * in[(y + dy) * p + x + dx];
  out[y * w + x] = acc;
}
