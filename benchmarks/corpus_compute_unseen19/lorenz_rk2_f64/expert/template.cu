// Lorenz trajectories, 256 explicit-midpoint steps in double.
// Expert parameterization (hand-written): THREADS a block, ITEMS trajectories a thread strided
// by THREADS (independent dependency chains interleaved in each step), the step loop
// unrolled by UNROLL, and STAGE=1 moving the interleaved (x, y, z) states through shared
// memory so the global loads and stores are unit-stride.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef STAGE
#define STAGE 0
#endif
#define LZ_STEPS 256
#define LZ_SIGMA 10.0
#define LZ_BETA (8.0 / 3.0)
#define LZ_DT 0.002

extern "C" __global__ void __launch_bounds__(THREADS)
lorenz_rk2_f64(float* __restrict__ out, const float* __restrict__ state,
               const float* __restrict__ rho, int n) {
  const int first = blockIdx.x * (THREADS * ITEMS);
  double x[ITEMS], y[ITEMS], z[ITEMS], r[ITEMS];
#if STAGE
  __shared__ float tile[3 * THREADS * ITEMS];
  const int count = min(THREADS * ITEMS, n - first);
  for (int e = threadIdx.x; e < 3 * count; e += THREADS) tile[e] = __ldg(state + 3 * first + e);
  __syncthreads();
#endif
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int local = threadIdx.x + j * THREADS;
    const int i = first + local < n ? first + local : n - 1;
#if STAGE
    const int at = first + local < n ? local : 0;
    x[j] = tile[3 * at];
    y[j] = tile[3 * at + 1];
    z[j] = tile[3 * at + 2];
#else
    x[j] = __ldg(state + 3 * i);
    y[j] = __ldg(state + 3 * i + 1);
    z[j] = __ldg(state + 3 * i + 2);
#endif
    r[j] = __ldg(rho + i);
  }
#pragma unroll 1
  for (int step0 = 0; step0 < LZ_STEPS; step0 += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        double kx = LZ_SIGMA * (y[j] - x[j]);
        double ky = x[j] * (r[j] - z[j]) - y[j];
        double kz = x[j] * y[j] - LZ_BETA * z[j];
        const double mx = x[j] + 0.5 * LZ_DT * kx;
        const double my = y[j] + 0.5 * LZ_DT * ky;
        const double mz = z[j] + 0.5 * LZ_DT * kz;
        kx = LZ_SIGMA * (my - mx);
        ky = mx * (r[j] - mz) - my;
        kz = mx * my - LZ_BETA * mz;
        x[j] += LZ_DT * kx;
        y[j] += LZ_DT * ky;
        z[j] += LZ_DT * kz;
      }
    }
  }
#if STAGE
  __syncthreads();
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int local = threadIdx.x + j * THREADS;
    tile[3 * local] = (float)x[j];
    tile[3 * local + 1] = (float)y[j];
    tile[3 * local + 2] = (float)z[j];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < 3 * count; e += THREADS) out[3 * first + e] = tile[e];
#else
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = first + threadIdx.x + j * THREADS;
    if (i < n) {
      out[3 * i] = (float)x[j];
      out[3 * i + 1] = (float)y[j];
      out[3 * i + 2] = (float)z[j];
    }
  }
#endif
}
