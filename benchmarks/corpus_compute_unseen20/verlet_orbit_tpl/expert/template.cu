// Test particles around a unit mass, 400 velocity-Verlet steps of 1/100 in float.
// Expert parameterization (hand-written): THREADS a block, ITEMS particles a thread strided
// by THREADS (independent chains interleaved in each step), the step loop unrolled by
// UNROLL, VEC=1 loading and storing each particle's state as one float4, and RSQRT=1 the
// inverse distance by rsqrtf (within 2 ulp) instead of a divide of a square root.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef RSQRT
#define RSQRT 0
#endif
#define STEPS 400
#define DT (1.0f / 100.0f)
#define HDT (0.5f * DT)

static __device__ __forceinline__ float inv_dist(float x, float y) {
#if RSQRT
  return rsqrtf(x * x + y * y);
#else
  return 1.0f / sqrtf(x * x + y * y);
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
verlet_orbit_tpl(float* __restrict__ out, const float* __restrict__ state, int n) {
  const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float x[ITEMS], y[ITEMS], vx[ITEMS], vy[ITEMS], ax[ITEMS], ay[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = min(first + j * THREADS, n - 1);
#if VEC
    const float4 s = __ldg(reinterpret_cast<const float4*>(state) + i);
    x[j] = s.x;
    y[j] = s.y;
    vx[j] = s.z;
    vy[j] = s.w;
#else
    x[j] = __ldg(state + 4 * i);
    y[j] = __ldg(state + 4 * i + 1);
    vx[j] = __ldg(state + 4 * i + 2);
    vy[j] = __ldg(state + 4 * i + 3);
#endif
    const float inv = inv_dist(x[j], y[j]), inv3 = inv * inv * inv;
    ax[j] = -x[j] * inv3;
    ay[j] = -y[j] * inv3;
  }
#pragma unroll 1
  for (int s0 = 0; s0 < STEPS; s0 += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        vx[j] += HDT * ax[j];
        vy[j] += HDT * ay[j];
        x[j] += DT * vx[j];
        y[j] += DT * vy[j];
        const float inv = inv_dist(x[j], y[j]), inv3 = inv * inv * inv;
        ax[j] = -x[j] * inv3;
        ay[j] = -y[j] * inv3;
        vx[j] += HDT * ax[j];
        vy[j] += HDT * ay[j];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = first + j * THREADS;
    if (i < n) {
#if VEC
      reinterpret_cast<float4*>(out)[i] = make_float4(x[j], y[j], vx[j], vy[j]);
#else
      out[4 * i] = x[j];
      out[4 * i + 1] = y[j];
      out[4 * i + 2] = vx[j];
      out[4 * i + 3] = vy[j];
#endif
    }
  }
}
