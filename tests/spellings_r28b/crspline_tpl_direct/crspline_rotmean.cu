// Mean of a periodic 64-knot Catmull-Rom spline over 64 points of a golden-rotation orbit,
// a third template hand: the knot count a file-scope constexpr, a helper templated on the
// count and the element type with the wrap written in its subscripts (`% N`), the segment
// clamped by a ternary, the samples counted up.

constexpr int kKnotCount = 64;
constexpr int kSampleCount = 64;

template <int N, typename T>
__device__ __forceinline__ T spline(const T* knot, T t) {
  const T s = t * N;
  int seg = static_cast<int>(s);
  seg = seg > N - 1 ? N - 1 : seg;
  const T f = s - seg;
  const T p0 = knot[(seg + N - 1) % N], p1 = knot[seg];
  const T p2 = knot[(seg + 1) % N], p3 = knot[(seg + 2) % N];
  const T c1 = T(0.5) * (p2 - p0);
  const T c2 = p0 - T(2.5) * p1 + T(2.0) * p2 - T(0.5) * p3;
  const T c3 = T(0.5) * (p3 - p0) + T(1.5) * (p1 - p2);
  return ((c3 * f + c2) * f + c1) * f + p1;
}

extern "C" __global__ void crspline_rotmean(float* out, const float* u, const float* table,
                                            int n) {
  __shared__ float knots[kKnotCount];
  for (int j = threadIdx.x; j < kKnotCount; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float x = u[i];
    float sum = 0.0f, phase = 0.0f;
    for (int k = 0; k < kSampleCount; ++k) {
      float t = x + phase;
      t = t >= 1.0f ? t - 1.0f : t;
      sum += spline<kKnotCount, float>(knots, t);
      phase += 0.61803398875f;
      if (phase >= 1.0f) phase -= 1.0f;
    }
    out[i] = sum * (1.0f / kSampleCount);
  }
}
