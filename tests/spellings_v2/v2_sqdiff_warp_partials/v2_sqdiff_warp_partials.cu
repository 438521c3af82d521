// part[b] = sum over block b's grid-stride share of (a[i] - b[i])^2: per-thread sums, a
// down-shuffle per warp, the warps' sums in shared memory, the first warp folds them.
// Launch: grid = 264, block = 128.
#define NT 128

extern "C" __global__ void v2_sqdiff_warp_partials(float* part, const float* a, const float* b,
                                                   int n) {
  __shared__ float warp_sums[NT / 32];
  float s = 0.0f;
  for (int i = threadIdx.x + blockIdx.x * NT; i < n; i += gridDim.x * NT) {
    const float d = __ldg(a + i) - __ldg(&b[i]);
    s += d * d;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x >= 32) return;
  s = threadIdx.x < NT / 32 ? warp_sums[threadIdx.x] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
