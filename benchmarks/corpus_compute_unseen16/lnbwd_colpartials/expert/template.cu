// Per-column partial sums of dy * xhat and dy over blocks of 64 rows.
// Expert parameterization (hand-written): a block of TX x TY threads covers TX * VEC
// columns of one 64-row block; each thread owns VEC adjacent columns (one float2 / float4
// load a row when cols is a multiple of VEC, scalar loads otherwise) and the rows
// ty, ty + TY, ... of the block, its row loop unrolled by UNROLL. The TY thread rows' sums
// meet in shared memory, thread row 0 adding them up.
// Launch: grid = (ceil(cols / (TX * VEC)), ceil(rows / 64)), block = (TX, TY).
// Defaults: the kernel's launch as written.

#ifndef TX
#define TX 256
#endif
#ifndef TY
#define TY 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define ROWS_PER_BLOCK 64
#define STEPS (ROWS_PER_BLOCK / TY)

extern "C" __global__ void __launch_bounds__(TX * TY) lnbwd_colpartials(
    float* dgamma_part, float* dbeta_part, const float* dy, const float* xhat, int rows,
    int cols) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c0 = (blockIdx.x * TX + tx) * VEC;
  const int r0 = blockIdx.y * ROWS_PER_BLOCK;
  const bool vec_ok = cols % VEC == 0;
  float sg[VEC], sb[VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v) sg[v] = sb[v] = 0.0f;
  for (int s = 0; s < STEPS; s += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int r = r0 + ty + (s + u) * TY;
      if (r < rows && c0 < cols) {
        const size_t at = (size_t)r * cols + c0;
        float g[VEC], x[VEC];
        if (VEC > 1 && vec_ok) {
#if VEC == 4
          const float4 g4 = *reinterpret_cast<const float4*>(dy + at);
          const float4 x4 = *reinterpret_cast<const float4*>(xhat + at);
          g[0] = g4.x; g[1] = g4.y; g[2] = g4.z; g[3] = g4.w;
          x[0] = x4.x; x[1] = x4.y; x[2] = x4.z; x[3] = x4.w;
#elif VEC == 2
          const float2 g2 = *reinterpret_cast<const float2*>(dy + at);
          const float2 x2 = *reinterpret_cast<const float2*>(xhat + at);
          g[0] = g2.x; g[1] = g2.y;
          x[0] = x2.x; x[1] = x2.y;
#endif
        } else {
#pragma unroll
          for (int v = 0; v < VEC; ++v) {
            const bool in = c0 + v < cols;
            g[v] = in ? dy[at + v] : 0.0f;
            x[v] = in ? xhat[at + v] : 0.0f;
          }
        }
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
          sg[v] += g[v] * x[v];
          sb[v] += g[v];
        }
      }
    }
  }
#if TY > 1
  __shared__ float part_g[TY][TX * VEC];
  __shared__ float part_b[TY][TX * VEC];
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    part_g[ty][tx * VEC + v] = sg[v];
    part_b[ty][tx * VEC + v] = sb[v];
  }
  __syncthreads();
  if (ty != 0) return;
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    for (int k = 1; k < TY; ++k) {
      sg[v] += part_g[k][tx * VEC + v];
      sb[v] += part_b[k][tx * VEC + v];
    }
  }
#endif
  const size_t o = (size_t)blockIdx.y * cols + c0;
#pragma unroll
  for (int v = 0; v < VEC; ++v) {
    if (c0 + v < cols) {
      dgamma_part[o + v] = sg[v];
      dbeta_part[o + v] = sb[v];
    }
  }
}
