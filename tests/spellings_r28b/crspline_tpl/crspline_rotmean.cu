// Mean of a periodic 64-knot Catmull-Rom spline over 64 points of a golden-rotation orbit,
// template hand: the knot count a template parameter, helpers for the wrap and the spline,
// restrict pointers, the segment clamped by min on the local, the grid stride named, the
// samples counted down by a for.

template <int N>
__device__ __forceinline__ int ring(int i) { return i % N; }

__device__ __forceinline__ float frac1(float t) { return t >= 1.0f ? t - 1.0f : t; }

template <int N>
__device__ __forceinline__ float catmull_rom(const float* __restrict__ knot, float t) {
  const float s = t * N;
  int seg = static_cast<int>(s);
  seg = min(seg, N - 1);
  const float f = s - seg;
  const float p0 = knot[ring<N>(seg + N - 1)];
  const float p1 = knot[seg];
  const float p2 = knot[ring<N>(seg + 1)];
  const float p3 = knot[ring<N>(seg + 2)];
  const float c1 = 0.5f * (p2 - p0);
  const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
  const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
  return ((c3 * f + c2) * f + c1) * f + p1;
}

extern "C" __global__ void crspline_rotmean(float* __restrict__ out, const float* __restrict__ u,
                                            const float* __restrict__ table, int n) {
  constexpr int kKnots = 64;
  constexpr int kSamples = 64;
  __shared__ float knots[kKnots];
  for (int j = threadIdx.x; j < kKnots; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = u[i];
    float sum = 0.0f;
    float phase = 0.0f;
    for (int k = kSamples; k > 0; --k) {
      sum += catmull_rom<kKnots>(knots, frac1(x + phase));
      phase = frac1(phase + 0.61803398875f);
    }
    out[i] = sum * (1.0f / kSamples);
  }
}
