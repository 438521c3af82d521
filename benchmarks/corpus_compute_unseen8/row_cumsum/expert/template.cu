// Inclusive prefix sum along each row of x [rows, cols] fp32, a block per row. Expert
// parameterization (hand-written): a block of THREADS threads takes the row in tiles of
// THREADS * ITEMS elements, loaded coalesced into shared memory (PAD 1: one spare word per
// 32 so the strided per-thread reads below do not share banks); each thread scans its ITEMS
// consecutive elements in registers (thread coarsening: the barrier-bound tree runs over
// THREADS totals, not over every element), the warps scan their threads' totals with
// __shfl_up_sync, one shared word per warp carries the warps' totals, and the tile goes
// back through shared memory to coalesced stores, offset by the running total of the tiles
// before it.
// Launch: grid = rows, block = THREADS. Defaults: the kernel as written's launch (256
// threads, one element a thread per chunk).
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef PAD
#define PAD 0
#endif
#define TILE (THREADS * ITEMS)
#define WARPS (THREADS / 32)
#define IDX(e) ((e) + PAD * ((e) / 32))

extern "C" __global__ void __launch_bounds__(THREADS)
row_cumsum(float* __restrict__ y, const float* __restrict__ x, int rows, int cols) {
  __shared__ float buf[TILE + PAD * (TILE / 32)];
  __shared__ float warp_total[WARPS];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float carry = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += TILE) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int e = k * THREADS + t;
      buf[IDX(e)] = c0 + e < cols ? __ldg(xr + c0 + e) : 0.0f;
    }
    __syncthreads();
    float v[ITEMS];
    float run = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      run += buf[IDX(t * ITEMS + k)];
      v[k] = run;
    }
    float inc = run;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const float up = __shfl_up_sync(0xffffffffu, inc, off);
      if (lane >= off) inc += up;
    }
    if (lane == 31) warp_total[warp] = inc;
    __syncthreads();
    float before = carry + (inc - run);
    float tile_total = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      if (w < warp) before += warp_total[w];
      tile_total += warp_total[w];
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) buf[IDX(t * ITEMS + k)] = before + v[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int e = k * THREADS + t;
      if (c0 + e < cols) yr[c0 + e] = buf[IDX(e)];
    }
    carry += tile_total;
    __syncthreads();
  }
}
