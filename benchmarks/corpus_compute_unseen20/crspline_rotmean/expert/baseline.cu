// Mean of a periodic Catmull-Rom spline along a rotation orbit:
//   out[i] = (1 / 64) * sum_{k < 64} S(frac(u[i] + o_k)),  o_0 = 0, o_{k+1} = frac(o_k + 0.618..)
// where S interpolates the 64 periodic knots table[0..63] at spacing 1/64.
// The table is staged in shared memory; functors evaluate the spline and the orbit mean
// (Thrust-style), a grid-stride loop applies them.
// Launch: grid = ((n + 2047) / 2048), block = (256): eight values a thread.

namespace {

constexpr int kKnots = 64;
constexpr int kSamples = 64;
constexpr float kStep = 0.61803398875f;  // the golden rotation

struct wrap_unit {
  __device__ float operator()(float t) const { return t >= 1.0f ? t - 1.0f : t; }
};

struct catmull_rom {
  const float* knots;  // kKnots values, periodic
  __device__ float operator()(float t) const {
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
  }
};

struct orbit_mean {
  catmull_rom spline;
  wrap_unit wrap;
  __device__ float operator()(float u) const {
    float total = 0.0f;
    float offset = 0.0f;
    for (int k = 0; k < kSamples; ++k) {
      total += spline(wrap(u + offset));
      offset = wrap(offset + kStep);
    }
    return total * (1.0f / kSamples);
  }
};

}  // namespace

extern "C" __global__ void crspline_rotmean(float* out, const float* u, const float* table,
                                            int n) {
  __shared__ float knots[kKnots];
  for (int j = threadIdx.x; j < kKnots; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  const orbit_mean op{catmull_rom{knots}, wrap_unit{}};
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = op(u[i]);
  }
}
