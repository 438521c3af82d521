// Mean of a periodic Catmull-Rom spline along a rotation orbit, another hand: lambdas (the
// wrap capturing nothing, the spline capturing the staged knots by reference), a while
// grid-stride loop with its stride in a local, constexpr sizes.
constexpr int kKnots = 64;
constexpr int kSamples = 64;
constexpr float kGolden = 0.61803398875f;

extern "C" __global__ void crspline_rotmean(float* out, const float* u, const float* table,
                                            int n) {
  __shared__ float knots[kKnots];
  if (threadIdx.x < kKnots) knots[threadIdx.x] = table[threadIdx.x];
  __syncthreads();
  auto wrap = [](float t) { return t >= 1.0f ? t - 1.0f : t; };
  auto spline = [&](float t) {
    const float s = t * kKnots;
    const int i = min(static_cast<int>(s), kKnots - 1);
    const float f = s - i;
    const float p0 = knots[(i + kKnots - 1) % kKnots];
    const float p1 = knots[i];
    const float p2 = knots[(i + 1) % kKnots];
    const float p3 = knots[(i + 2) % kKnots];
    const float c1 = 0.5f * (p2 - p0);
    const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
    const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
    return ((c3 * f + c2) * f + c1) * f + p1;
  };
  const int stride = gridDim.x * blockDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  while (i < n) {
    float total = 0.0f;
    float offset = 0.0f;
    for (int k = 0; k < kSamples; ++k) {
      total += spline(wrap(u[i] + offset));
      offset = wrap(offset + kGolden);
    }
    out[i] = total * (1.0f / kSamples);
    i += stride;
  }
}
