// d2[i] = min over 64 centroids of |x[i] - c|^2, points x [n, 4], centroids in constant memory.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// points, ITEMS a thread strided by THREADS, so each centroid read serves ITEMS distances;
// VEC 1 loads a point as one float4; SMEM 1 copies the centroids to shared memory once a
// block and reads them there (broadcast) instead of through the constant cache.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one point each, scalar loads, constant).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef SMEM
#define SMEM 0
#endif
#define NUM_CENTROIDS 64
#define DIM 4

__constant__ float centroids[NUM_CENTROIDS * DIM];

extern "C" __global__ void __launch_bounds__(THREADS)
nearest_centroid_d2(float* __restrict__ d2, const float* __restrict__ x, int n) {
#if SMEM
  __shared__ float cs[NUM_CENTROIDS * DIM];
  for (int e = threadIdx.x; e < NUM_CENTROIDS * DIM; e += THREADS) cs[e] = centroids[e];
  __syncthreads();
#else
  const float* cs = centroids;
#endif
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float p[ITEMS][DIM];
  float best[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    const int j = i < n ? i : n - 1;
#if VEC
    const float4 v = reinterpret_cast<const float4*>(x)[j];
    p[it][0] = v.x; p[it][1] = v.y; p[it][2] = v.z; p[it][3] = v.w;
#else
#pragma unroll
    for (int d = 0; d < DIM; ++d) p[it][d] = x[(size_t)j * DIM + d];
#endif
    best[it] = 3.0e38f;
  }
#pragma unroll 4
  for (int c = 0; c < NUM_CENTROIDS; ++c) {
    const float q0 = cs[c * DIM], q1 = cs[c * DIM + 1], q2 = cs[c * DIM + 2], q3 = cs[c * DIM + 3];
#pragma unroll
    for (int it = 0; it < ITEMS; ++it) {
      const float a = p[it][0] - q0, b = p[it][1] - q1, e = p[it][2] - q2, f = p[it][3] - q3;
      best[it] = fminf(best[it], a * a + b * b + e * e + f * f);
    }
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int i = base + it * THREADS;
    if (i < n) d2[i] = best[it];
  }
}
