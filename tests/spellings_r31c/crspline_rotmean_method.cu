// Mean of a periodic Catmull-Rom spline along a rotation orbit, a third hand (beside the
// round's two): the spline a struct holding the staged knots with a named const method,
// its member set by assignment, a free wrap helper.
#define NK 64
struct Spline {
  const float* k;
  __device__ float at(float t) const {
    const float s = t * NK;
    const int i = min((int)s, NK - 1);
    const float f = s - i;
    const float p0 = k[(i + NK - 1) % NK], p1 = k[i], p2 = k[(i + 1) % NK], p3 = k[(i + 2) % NK];
    const float c1 = 0.5f * (p2 - p0);
    const float c2 = p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3;
    const float c3 = 0.5f * (p3 - p0) + 1.5f * (p1 - p2);
    return ((c3 * f + c2) * f + c1) * f + p1;
  }
};
__device__ inline float wrap(float t) { return t >= 1.0f ? t - 1.0f : t; }
extern "C" __global__ void crspline_rotmean(float* out, const float* u, const float* table, int n) {
  __shared__ float knots[NK];
  for (int j = threadIdx.x; j < NK; j += blockDim.x) knots[j] = table[j];
  __syncthreads();
  Spline sp;
  sp.k = knots;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float total = 0.0f, offset = 0.0f;
    for (int s = 0; s < 64; ++s) {
      total += sp.at(wrap(u[i] + offset));
      offset = wrap(offset + 0.61803398875f);
    }
    out[i] = total * (1.0f / 64);
  }
}
