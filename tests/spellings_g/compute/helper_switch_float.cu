// out[i] = a piecewise response of in[i]: a __device__ helper with a switch over a regime
// and an iteration loop, float
__device__ float settle(float v, int regime) {
  float y = v;
  switch (regime) {
    case 0: y = v * 0.5f; break;
    case 1: y = sqrtf(fabsf(v) + 1.0f); break;
    default: y = expf(-fabsf(v)); break;
  }
  for (int it = 0; it < 24; ++it) y = y - (y * y * y - v) / (3.0f * y * y + 1.0f);
  return y;
}

extern "C" __global__ void k(float* out, const float* in, int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  const float v = in[i];
  const int regime = v < -1.0f ? 0 : (v < 1.0f ? 1 : 2);
  out[i] = settle(v, regime);
}
