// y = A x for a CSR matrix (row_ptr, col_idx, vals), fp32. Expert parameterization
// (hand-written): LANES threads (a power of two up to a warp) share a row, so a warp takes
// 32 / LANES rows and a block THREADS / LANES; each lane walks the row's nonzeros LANES
// apart, ILP of them a step into ILP independent sums (the loads of a step overlap), then
// the row's lanes add their sums with shuffles of width LANES. No thread leaves early: a
// lane past the last row sums nothing, so every lane of a warp reaches the shuffles.
// LDG 1 reads vals, col_idx and x through the read-only cache.
// Launch: grid = ceil(rows / (THREADS / LANES)), block = THREADS.
// Defaults: the kernel as written (a warp a row, 4 warps a block).
#ifndef LANES
#define LANES 32
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef ILP
#define ILP 1
#endif
#ifndef LDG
#define LDG 0
#endif
#define ROWS_PER_BLOCK (THREADS / LANES)
#if LDG
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1)
csr_spmv_warp(float* __restrict__ y, const int* __restrict__ row_ptr,
              const int* __restrict__ col_idx, const float* __restrict__ vals,
              const float* __restrict__ x, int rows) {
  const int lane = threadIdx.x % LANES;
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / LANES;
  int begin = 0, end = 0;
  if (row < rows) {
    begin = row_ptr[row];
    end = row_ptr[row + 1];
  }
  float part[ILP];
#pragma unroll
  for (int u = 0; u < ILP; ++u) part[u] = 0.0f;
  int j = begin + lane;
  for (; j + (ILP - 1) * LANES < end; j += ILP * LANES) {
#pragma unroll
    for (int u = 0; u < ILP; ++u) {
      const int k = j + u * LANES;
      part[u] += LOAD(vals + k) * LOAD(x + LOAD(col_idx + k));
    }
  }
  for (; j < end; j += LANES) part[0] += LOAD(vals + j) * LOAD(x + LOAD(col_idx + j));
  float sum = part[0];
#pragma unroll
  for (int u = 1; u < ILP; ++u) sum += part[u];
#pragma unroll
  for (int offset = LANES / 2; offset > 0; offset /= 2)
    sum += __shfl_down_sync(0xffffffffu, sum, offset, LANES);
  if (lane == 0 && row < rows) y[row] = sum;
}
