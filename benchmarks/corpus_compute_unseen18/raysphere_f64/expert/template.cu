// Nearest hit of each ray against 64 spheres, in double.
// Expert parameterization (hand-written): THREADS a block, ITEMS rays a thread strided by
// THREADS (independent square-root chains sharing each sphere's loads), SMEM=1 staging the
// spheres once a block in shared memory as doubles with the squared radius precomputed, and
// the sphere loop unrolled by UNROLL.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define NUM_SPHERES 64

extern "C" __global__ void __launch_bounds__(THREADS) raysphere_f64(
    float* __restrict__ out, const float* __restrict__ rays, const float* __restrict__ spheres,
    unsigned n) {
#if SMEM
  __shared__ double sph[NUM_SPHERES][4];
  for (int k = threadIdx.x; k < NUM_SPHERES; k += THREADS) {
    sph[k][0] = spheres[4 * k];
    sph[k][1] = spheres[4 * k + 1];
    sph[k][2] = spheres[4 * k + 2];
    sph[k][3] = (double)spheres[4 * k + 3] * spheres[4 * k + 3];
  }
  __syncthreads();
#endif
  const size_t base = (size_t)blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  double o[ITEMS][3], d[ITEMS][3], best[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const size_t i = base + (size_t)j * THREADS;
    const size_t at = i < n ? 6 * i : 0;
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      o[j][c] = rays[at + c];
      d[j][c] = rays[at + 3 + c];
    }
    best[j] = -1.0;
  }
#pragma unroll 1
  for (int k0 = 0; k0 < NUM_SPHERES; k0 += UNROLL) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int k = k0 + u;
#if SMEM
      const double cx = sph[k][0], cy = sph[k][1], cz = sph[k][2], r2 = sph[k][3];
#else
      const double cx = spheres[4 * k], cy = spheres[4 * k + 1], cz = spheres[4 * k + 2];
      const double rad = spheres[4 * k + 3];
      const double r2 = rad * rad;
#endif
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const double px = o[j][0] - cx, py = o[j][1] - cy, pz = o[j][2] - cz;
        const double b = px * d[j][0] + py * d[j][1] + pz * d[j][2];
        const double disc = b * b - (px * px + py * py + pz * pz - r2);
        const double t = disc < 0.0 ? -1.0 : -b - sqrt(disc);
        best[j] = t > 0.0 && (best[j] < 0.0 || t < best[j]) ? t : best[j];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const size_t i = base + (size_t)j * THREADS;
    if (i < n) out[i] = (float)best[j];
  }
}
