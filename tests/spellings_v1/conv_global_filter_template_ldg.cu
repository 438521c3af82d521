// out = in correlated with a (2R+1) x (2R+1) filter in global memory (an argument), zero
// padding; the kernel a template of the radius with one instantiation, the loads __ldg,
// the offsets through an index function, the taps unrolled on a literal
__device__ __forceinline__ int pix(int y, int x, int w) { return y * w + x; }

template <int R>
__global__ void k(float* __restrict__ out, const float* __restrict__ in,
                  const float* __restrict__ wt, int h, int w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) {
    float acc = 0.0f;
#pragma unroll
    for (int dy = -R; dy <= R; ++dy) {
#pragma unroll
      for (int dx = -R; dx <= R; ++dx) {
        const int yy = y + dy, xx = x + dx;
        if (yy >= 0 && yy < h && xx >= 0 && xx < w)
          acc += __ldg(&wt[(dy + R) * (2 * R + 1) + dx + R]) * __ldg(&in[pix(yy, xx, w)]);
      }
    }
    out[pix(y, x, w)] = acc;
  }
}
template __global__ void k<3>(float*, const float*, const float*, int, int);
