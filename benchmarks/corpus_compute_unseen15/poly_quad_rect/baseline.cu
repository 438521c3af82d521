// Midpoint-rule integral of a rectified degree-8 polynomial over [a[i], a[i] + 1] in float
// precision: q[i] = h * sum_{j<64} g(a[i] + (j + 1/2) h), h = 1/64, where
// g(t) = p(t) if p(t) > 0 and -p(t) / 2 otherwise, p(t) = sum_k coef[k] t^k (Horner, the
// coefficients in constant memory, coef[8] the leading one). One interval per thread.
// Launch: grid = ((n + 255) / 256), block = (256).

#define DEGREE 8
#define PANELS 64

__constant__ float coef[DEGREE + 1];

__device__ float horner(float t) {
  float p = coef[DEGREE];
  for (int k = DEGREE - 1; k >= 0; --k) p = p * t + coef[k];
  return p;
}

__device__ float rectified(float t) {
  const float p = horner(t);
  if (p > 0.0f) return p;
  return -0.5f * p;
}

extern "C" __global__ void poly_quad_rect(float* q, const float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float h = 1.0f / PANELS;
    float t = a[i] + 0.5f * h;
    float sum = 0.0f;
    for (int j = 0; j < PANELS; j++) {
      sum += rectified(t);
      t += h;
    }
    q[i] = sum * h;
  }
}
