// loss[r] = log-sum-exp of half logits row r less its label's logit, one warp a row.
// Expert parameterization (hand-written): WARPS rows a block; each lane loads UNROLL logits
// (strided by 32) together before using them; ONLINE = 1 reads the row once, keeping a
// running maximum and rescaling its sum of exponentials (the lanes' pairs merged by xor
// shuffles), ONLINE = 0 runs the max pass and the sum pass as written.
// Launch: grid = ceil(rows / WARPS), block = WARPS * 32.
// Defaults: the kernel as written.
#include <cuda_fp16.h>

#ifndef WARPS
#define WARPS 4
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef ONLINE
#define ONLINE 0
#endif
#define NEG_BIG -3.0e38f

extern "C" __global__ void __launch_bounds__(WARPS * 32) xent_rows_f16(float* loss,
                                                                        const __half* logits,
                                                                        const int* label,
                                                                        int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= rows) return;
  const __half* z = logits + (size_t)row * cols;
  float m = NEG_BIG, s = 0.0f;
#if ONLINE
  for (int c0 = 0; c0 < cols; c0 += 32 * UNROLL) {
    float v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = c0 + u * 32 + lane;
      v[u] = c < cols ? __half2float(z[c]) : NEG_BIG;
    }
    float cm = m;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) cm = fmaxf(cm, v[u]);
    s *= expf(m - cm);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += expf(v[u] - cm);
    m = cm;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o);
    const float os = __shfl_xor_sync(0xffffffffu, s, o);
    const float nm = fmaxf(m, om);
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
  }
#else
  for (int c0 = 0; c0 < cols; c0 += 32 * UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = c0 + u * 32 + lane;
      if (c < cols) m = fmaxf(m, __half2float(z[c]));
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  for (int c0 = 0; c0 < cols; c0 += 32 * UNROLL) {
    float v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int c = c0 + u * 32 + lane;
      v[u] = c < cols ? __half2float(z[c]) : NEG_BIG;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += expf(v[u] - m);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#endif
  if (lane == 0) loss[row] = logf(s) + m - __half2float(z[label[row]]);
}
