// Row-wise L2 normalisation. Expert parameterization (hand-written): LANES threads per row
// (32 / LANES rows per warp, the sum of squares reduced by shuffles inside each group of
// LANES lanes), VEC consecutive elements per lane per step (float2 / float4 loads and
// stores where cols % VEC == 0, else one element at a time), WARPS_PER_BLOCK warps per
// (32, WARPS_PER_BLOCK) block, and REG_STEPS > 0 keeps a row's values in registers between
// the two passes (REG_STEPS steps of VEC per lane: rows of up to REG_STEPS * LANES * VEC
// elements; longer rows are read twice, as written).
// Launch: grid = ceil(rows / (WARPS_PER_BLOCK * 32 / LANES)), block = (32, WARPS_PER_BLOCK).
// Defaults: the kernel as written.
#ifndef WARPS_PER_BLOCK
#define WARPS_PER_BLOCK 8
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef REG_STEPS
#define REG_STEPS 0
#endif
#define EPS 1e-12f
#define ROWS_PER_WARP (32 / LANES)
#define ROWS_PER_BLOCK (WARPS_PER_BLOCK * ROWS_PER_WARP)

__device__ __forceinline__ void load_vec(const float* p, float (&v)[VEC]) {
#if VEC == 1
  v[0] = p[0];
#elif VEC == 2
  const float2 a = *reinterpret_cast<const float2*>(p);
  v[0] = a.x; v[1] = a.y;
#else
  const float4 a = *reinterpret_cast<const float4*>(p);
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
#endif
}

__device__ __forceinline__ void store_scaled(float* p, const float (&v)[VEC], float inv) {
#if VEC == 1
  p[0] = v[0] * inv;
#elif VEC == 2
  *reinterpret_cast<float2*>(p) = make_float2(v[0] * inv, v[1] * inv);
#else
  *reinterpret_cast<float4*>(p) = make_float4(v[0] * inv, v[1] * inv, v[2] * inv, v[3] * inv);
#endif
}

extern "C" __global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
row_l2norm(float* __restrict__ y, float* __restrict__ norms, const float* __restrict__ x,
           int rows, int cols) {
  const int lane = threadIdx.x % LANES;
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.y * ROWS_PER_WARP + threadIdx.x / LANES;
  const bool valid = row < rows;  // no early return: the shuffles name the whole warp
  const float* xr = x + (size_t)row * cols;
  float* yr = y + (size_t)row * cols;
  // rows start VEC-aligned when cols % VEC == 0 (VEC 1: always)
  const bool vec = cols % VEC == 0;
#if REG_STEPS > 0
  const bool cached = vec && cols <= REG_STEPS * LANES * VEC;
  float keep[REG_STEPS][VEC];
#endif

  float ss = 0.0f;
  if (valid) {
#if REG_STEPS > 0
    if (cached) {
#pragma unroll
      for (int k = 0; k < REG_STEPS; ++k) {
        const int c = (k * LANES + lane) * VEC;
        if (c < cols) {
          load_vec(xr + c, keep[k]);
#pragma unroll
          for (int e = 0; e < VEC; ++e) ss += keep[k][e] * keep[k][e];
        }
      }
    } else
#endif
    if (vec) {
      for (int c = lane * VEC; c < cols; c += LANES * VEC) {
        float v[VEC];
        load_vec(xr + c, v);
#pragma unroll
        for (int e = 0; e < VEC; ++e) ss += v[e] * v[e];
      }
    } else {
      for (int c = lane; c < cols; c += LANES) ss += xr[c] * xr[c];
    }
  }
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  if (!valid) return;

  const float norm = sqrtf(ss);
  const float inv = 1.0f / fmaxf(norm, EPS);
#if REG_STEPS > 0
  if (cached) {
#pragma unroll
    for (int k = 0; k < REG_STEPS; ++k) {
      const int c = (k * LANES + lane) * VEC;
      if (c < cols) store_scaled(yr + c, keep[k], inv);
    }
  } else
#endif
  if (vec) {
    for (int c = lane * VEC; c < cols; c += LANES * VEC) {
      float v[VEC];
      load_vec(xr + c, v);
      store_scaled(yr + c, v, inv);
    }
  } else {
    for (int c = lane; c < cols; c += LANES) yr[c] = xr[c] * inv;
  }
  if (lane == 0) norms[row] = norm;
}
