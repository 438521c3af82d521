// For each point p = (px[i], py[i], pz[i]): a field summed over NPLANES planes held in
// constant memory (per plane: unit normal nx, ny, nz, offset d, weight wt, sharpness k).
// With s = n . p - d, the signed distance to the plane, a point in front of the plane
// (s > 0) gets wt * exp(-k s^2), one behind it wt * (1 + sin(s) * cos(k s)).
// USE_FAST_MATH 1 uses the hardware approximations (__expf, __sinf, __cosf).
// Launch: grid = (n + 255) / 256, block = 256.
#ifndef USE_FAST_MATH
#define USE_FAST_MATH 0
#endif
#define NPLANES 16

__constant__ float planes[NPLANES * 6];

extern "C" __global__ void percell_compute(float* out, const float* px, const float* py,
                                           const float* pz, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  float x = px[i], y = py[i], z = pz[i];
  float acc = 0.0f;
  for (int p = 0; p < NPLANES; ++p) {
    const float* pl = &planes[p * 6];
    float s = pl[0] * x + pl[1] * y + pl[2] * z - pl[3];
    float wt = pl[4], k = pl[5];
    if (s > 0.0f) {
#if USE_FAST_MATH
      acc += wt * __expf(-k * s * s);
#else
      acc += wt * expf(-k * s * s);
#endif
    } else {
#if USE_FAST_MATH
      acc += wt * (1.0f + __sinf(s) * __cosf(k * s));
#else
      acc += wt * (1.0f + sinf(s) * cosf(k * s));
#endif
    }
  }
  out[i] = acc;
}
