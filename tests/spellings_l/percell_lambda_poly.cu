// out[i] = sum over 16 planes of a weight times exp(-k s^2) on the planes' positive side and a
// cubic in s on the other, s the signed distance of point i; the distance and the cubic
// through lambdas
#define NP 16
__constant__ float planes[NP * 6];

extern "C" __global__ void k(float* out, const float* px, const float* py, const float* pz,
                             int n) {
  const int i = blockIdx.x * 256 + threadIdx.x;
  if (i >= n) return;
  const float x = px[i];
  const float y = py[i];
  const float z = pz[i];
  auto dist = [&](int p) {
    return planes[p * 6] * x + planes[p * 6 + 1] * y + planes[p * 6 + 2] * z - planes[p * 6 + 3];
  };
  auto cubic = [](float s, float c) { return ((0.25f * s - c) * s + 1.5f) * s - 0.5f; };
  float acc = 0.0f;
  for (int p = 0; p < NP; ++p) {
    const float s = dist(p);
    if (s > 0.0f) {
      acc += planes[p * 6 + 4] * expf(-planes[p * 6 + 5] * s * s);
    } else {
      acc += planes[p * 6 + 4] * cubic(s, planes[p * 6 + 5]);
    }
  }
  out[i] = acc;
}
