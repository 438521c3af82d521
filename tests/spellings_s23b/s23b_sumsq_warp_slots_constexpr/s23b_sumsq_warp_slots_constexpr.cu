// Sum of squares, first pass: block b writes partials[b]. Shuffles fold each warp under
// #pragma unroll over constexpr widths, one shared slot a warp, the first warp folds them.
// Launch: grid = 264, block = 512.
constexpr int kWarp = 32;
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / kWarp;

extern "C" __global__ void s23b_sumsq_warp_slots_constexpr(float* partials, const float* x,
                                                           int n) {
  __shared__ float slots[kWarps];
  float acc = 0.0f;
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += kThreads * gridDim.x) {
    const float v = x[i];
    acc += v * v;
  }
#pragma unroll
  for (int o = kWarp / 2; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  const int lane = threadIdx.x % kWarp;
  const int wid = threadIdx.x / kWarp;
  if (lane == 0) slots[wid] = acc;
  __syncthreads();
  if (wid == 0) {
    float s = lane < kWarps ? slots[lane] : 0.0f;
#pragma unroll
    for (int o = kWarp / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) partials[blockIdx.x] = s;
  }
}
