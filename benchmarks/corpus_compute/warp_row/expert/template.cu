// Row-wise symmetric int8 quantization. Expert parameterization (hand-written): LANES
// threads per row (32 // LANES rows per warp, the absmax reduced by shuffles inside each
// group of LANES lanes), VEC consecutive elements per lane per step (float2/float4 loads
// and char2/char4 stores where cols % VEC == 0, else one element at a time), and
// WARPS_PER_BLOCK warps per block.
// Launch: grid = ceil(rows / (WARPS_PER_BLOCK * 32 / LANES)), block = 32 * WARPS_PER_BLOCK.
// Defaults: the kernel as written.
#include <cstdint>

#ifndef WARPS_PER_BLOCK
#define WARPS_PER_BLOCK 4
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef VEC
#define VEC 1
#endif
#define ROWS_PER_BLOCK (WARPS_PER_BLOCK * (32 / LANES))

__device__ __forceinline__ void load_vec(const float* p, float (&v)[VEC]) {
#if VEC == 1
  v[0] = p[0];
#elif VEC == 2
  const float2 a = *reinterpret_cast<const float2*>(p);
  v[0] = a.x; v[1] = a.y;
#else
#pragma unroll
  for (int h = 0; h < VEC / 4; ++h) {
    const float4 a = reinterpret_cast<const float4*>(p)[h];
    v[4 * h] = a.x; v[4 * h + 1] = a.y; v[4 * h + 2] = a.z; v[4 * h + 3] = a.w;
  }
#endif
}

__device__ __forceinline__ void store_vec(int8_t* p, const float (&v)[VEC], float inv) {
  signed char b[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) b[e] = (signed char)__float2int_rn(v[e] * inv);
#if VEC == 1
  p[0] = b[0];
#elif VEC == 2
  *reinterpret_cast<char2*>(p) = make_char2(b[0], b[1]);
#else
#pragma unroll
  for (int h = 0; h < VEC / 4; ++h)
    reinterpret_cast<char4*>(p)[h] = make_char4(b[4 * h], b[4 * h + 1], b[4 * h + 2], b[4 * h + 3]);
#endif
}

extern "C" __global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
warp_row(int8_t* __restrict__ q, float* __restrict__ scales, const float* __restrict__ x,
         int rows, int cols) {
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / LANES;
  const int lane = threadIdx.x % LANES;
  const bool valid = row < rows;  // no early return: the shuffles name the whole warp
  const float* xr = x + (long long)row * cols;
  int8_t* qr = q + (long long)row * cols;
  const bool vec = VEC > 1 && cols % VEC == 0;

  float amax = 0.0f;
  if (valid) {
    if (vec) {
      for (int c = lane * VEC; c < cols; c += LANES * VEC) {
        float v[VEC];
        load_vec(xr + c, v);
#pragma unroll
        for (int e = 0; e < VEC; ++e) amax = fmaxf(amax, fabsf(v[e]));
      }
    } else {
      for (int c = lane; c < cols; c += LANES) amax = fmaxf(amax, fabsf(xr[c]));
    }
  }
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  if (!valid) return;

  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  if (vec) {
    for (int c = lane * VEC; c < cols; c += LANES * VEC) {
      float v[VEC];
      load_vec(xr + c, v);
      store_vec(qr + c, v, inv);
    }
  } else {
    for (int c = lane; c < cols; c += LANES) qr[c] = (int8_t)__float2int_rn(xr[c] * inv);
  }
  if (lane == 0) scales[row] = amax / 127.0f;
}
