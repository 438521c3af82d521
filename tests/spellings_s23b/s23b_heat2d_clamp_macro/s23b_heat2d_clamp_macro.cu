// One explicit heat step, out = in + 0.2 * (sum of the four neighbours - 4 in), every edge
// replicated (the neighbour index clamped into the image). One point a thread.
// Launch: grid = ((w + 31) / 32, (h + 7) / 8), block = (32, 8).
#define AT(p, x, y) (p)[(size_t)(y) * w + (x)]

extern "C" __global__ void s23b_heat2d_clamp_macro(float* out, const float* in, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int xl = max(x - 1, 0), xr = min(x + 1, w - 1);
  const int yu = max(y - 1, 0), yd = min(y + 1, h - 1);
  const float c = AT(in, x, y);
  const float lap = AT(in, xl, y) + AT(in, xr, y) + AT(in, x, yu) + AT(in, x, yd) - 4.0f * c;
  AT(out, x, y) = c + 0.2f * lap;
}
