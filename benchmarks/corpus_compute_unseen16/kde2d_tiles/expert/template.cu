// density[q] = sum_j w[j] * exp(-|query[q] - pts[j]|^2 / (2 h^2)), h = 0.25.
// Expert parameterization (hand-written): a block of THREADS threads owns THREADS * ITEMS
// queries, ITEMS a thread strided by THREADS, and stages the points in shared tiles of
// THREADS; each point read from shared memory serves all ITEMS queries; the point loop is
// unrolled by UNROLL; EXP2 evaluates the exponential as exp2f. Each query sums its points
// in point order, as written.
// Launch: grid = ceil(nq / (THREADS * ITEMS)), block = THREADS.
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
#ifndef EXP2
#define EXP2 0
#endif
constexpr int kUnroll = UNROLL;

extern "C" __global__ void __launch_bounds__(THREADS) kde2d_tiles(
    float* density, const float* query, const float* pts, const float* w, int nq, int npts) {
  __shared__ float2 tile_p[THREADS];
  __shared__ float tile_w[THREADS];
#if EXP2
  const float scale = -8.0f * 1.4426950408889634f;
#else
  const float scale = -8.0f;
#endif
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float qx[ITEMS], qy[ITEMS], acc[ITEMS];
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int q = base + it * THREADS;
    const float2 me = q < nq ? reinterpret_cast<const float2*>(query)[q] : make_float2(0.0f, 0.0f);
    qx[it] = me.x;
    qy[it] = me.y;
    acc[it] = 0.0f;
  }
  for (int t0 = 0; t0 < npts; t0 += THREADS) {
    const int j = t0 + threadIdx.x;
    if (j < npts) {
      tile_p[threadIdx.x] = reinterpret_cast<const float2*>(pts)[j];
      tile_w[threadIdx.x] = w[j];
    }
    __syncthreads();
    const int count = npts - t0 < THREADS ? npts - t0 : THREADS;
#pragma unroll kUnroll
    for (int jj = 0; jj < count; ++jj) {
      const float2 p = tile_p[jj];
      const float pw = tile_w[jj];
#pragma unroll
      for (int it = 0; it < ITEMS; ++it) {
        const float dx = qx[it] - p.x, dy = qy[it] - p.y;
#if EXP2
        acc[it] += pw * exp2f((dx * dx + dy * dy) * scale);
#else
        acc[it] += pw * expf((dx * dx + dy * dy) * scale);
#endif
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int it = 0; it < ITEMS; ++it) {
    const int q = base + it * THREADS;
    if (q < nq) density[q] = acc[it];
  }
}
