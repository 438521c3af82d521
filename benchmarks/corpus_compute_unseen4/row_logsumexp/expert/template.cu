// Row log-sum-exp, online (running maximum, rescaled sum). Expert parameterization
// (hand-written): LANES consecutive lanes of a warp share a row (32 / LANES rows per warp),
// WARPS warps a block; each lane loads VEC floats at a time when the row length is a
// multiple of VEC (the rows are then VEC-aligned), else one at a time; the lanes of a row
// merge their (max, sum) pairs with butterfly shuffles inside their group. FAST_EXP 1 uses
// the hardware __expf. Lanes of a row past the last row run the shuffles with empty state
// (every lane of a warp takes part in every shuffle).
// Launch: grid = ceil(rows / (WARPS * 32 / LANES)), block = WARPS * 32.
// Defaults: the kernel as written (a warp a row, 8 warps, scalar loads).
#ifndef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif
#define ROWS_PER_BLOCK (WARPS * 32 / LANES)

__device__ __forceinline__ float exp_of(float v) {
#if FAST_EXP
  return __expf(v);
#else
  return expf(v);
#endif
}

// (m, s) absorbs (om, os): both sums rescaled to the larger maximum.
__device__ __forceinline__ void lse_merge(float& m, float& s, float om, float os) {
  if (om > m) {
    s = s * exp_of(m - om) + os;
    m = om;
  } else if (os > 0.0f) {
    s += os * exp_of(om - m);
  }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32, 1)
row_logsumexp(float* __restrict__ out, const float* __restrict__ x, int rows, int cols) {
  const int lane = threadIdx.x % LANES;
  const int r = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / LANES;
  float m = -INFINITY, s = 0.0f;
  if (r < rows) {
    const float* row = x + (size_t)r * cols;
#if VEC == 1
    for (int j = lane; j < cols; j += LANES) lse_merge(m, s, row[j], 1.0f);
#else
    if (cols % VEC == 0) {
#if VEC == 4
      const float4* row4 = reinterpret_cast<const float4*>(row);
      for (int j = lane; j < cols / 4; j += LANES) {
        const float4 v = row4[j];
        lse_merge(m, s, v.x, 1.0f);
        lse_merge(m, s, v.y, 1.0f);
        lse_merge(m, s, v.z, 1.0f);
        lse_merge(m, s, v.w, 1.0f);
      }
#else
      const float2* row2 = reinterpret_cast<const float2*>(row);
      for (int j = lane; j < cols / 2; j += LANES) {
        const float2 v = row2[j];
        lse_merge(m, s, v.x, 1.0f);
        lse_merge(m, s, v.y, 1.0f);
      }
#endif
    } else {
      for (int j = lane; j < cols; j += LANES) lse_merge(m, s, row[j], 1.0f);
    }
#endif
  }
#pragma unroll
  for (int offset = LANES / 2; offset >= 1; offset /= 2) {
    const float om = __shfl_xor_sync(0xffffffffu, m, offset, LANES);
    const float os = __shfl_xor_sync(0xffffffffu, s, offset, LANES);
    lse_merge(m, s, om, os);
  }
  if (lane == 0 && r < rows) out[r] = m + logf(s);
}
