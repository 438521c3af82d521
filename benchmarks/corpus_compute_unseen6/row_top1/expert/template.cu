// Top-1 (largest value, smallest column on ties) of every row of scores [rows, cols]. Expert
// parameterization (hand-written): LANES threads share a row and a block holds ROWS rows
// (LANES * ROWS threads); each thread scans its columns VEC floats a load when cols is a
// multiple of VEC (the rows are then VEC-aligned), else one at a time. FINAL 0 merges the
// row's (value, column) pairs in a shared-memory tree (as written); 1 merges them with warp
// shuffles, then (LANES > 32) the warps' pairs in shared memory. The merge is a total order
// (value, then column), so every config picks the same column.
// Launch: grid = ceil(rows / ROWS), block = LANES * ROWS.
// Defaults: the kernel as written (128 threads a row, a row a block, scalar loads, the tree).
#ifndef LANES
#define LANES 128
#endif
#ifndef ROWS
#define ROWS 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef FINAL
#define FINAL 0
#endif

__device__ __forceinline__ bool beats(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

__device__ __forceinline__ void take(float v, int i, float& bv, int& bi) {
  if (beats(v, i, bv, bi)) {
    bv = v;
    bi = i;
  }
}

extern "C" __global__ void __launch_bounds__(LANES * ROWS, 1)
row_top1(int* __restrict__ best_idx, float* __restrict__ best_val,
         const float* __restrict__ scores, int rows, int cols) {
  const int slot = threadIdx.x / LANES, lane = threadIdx.x % LANES;
  const int r = blockIdx.x * ROWS + slot;
  float bv = -INFINITY;
  int bi = cols;
  if (r < rows) {
    const float* row = scores + (size_t)r * cols;
#if VEC > 1
    if (cols % VEC == 0) {
      for (int g = lane; g < cols / VEC; g += LANES) {
#if VEC == 4
        const float4 v = __ldg(reinterpret_cast<const float4*>(row) + g);
        take(v.x, 4 * g, bv, bi);
        take(v.y, 4 * g + 1, bv, bi);
        take(v.z, 4 * g + 2, bv, bi);
        take(v.w, 4 * g + 3, bv, bi);
#else
        const float2 v = __ldg(reinterpret_cast<const float2*>(row) + g);
        take(v.x, 2 * g, bv, bi);
        take(v.y, 2 * g + 1, bv, bi);
#endif
      }
    } else
#endif
    {
      for (int j = lane; j < cols; j += LANES) take(__ldg(row + j), j, bv, bi);
    }
  }
#if FINAL == 0
  __shared__ float vals[ROWS][LANES];
  __shared__ int idxs[ROWS][LANES];
  vals[slot][lane] = bv;
  idxs[slot][lane] = bi;
  __syncthreads();
  for (int half = LANES / 2; half > 0; half >>= 1) {
    if (lane < half && beats(vals[slot][lane + half], idxs[slot][lane + half],
                             vals[slot][lane], idxs[slot][lane])) {
      vals[slot][lane] = vals[slot][lane + half];
      idxs[slot][lane] = idxs[slot][lane + half];
    }
    __syncthreads();
  }
  bv = vals[slot][0];
  bi = idxs[slot][0];
#else
#define WIDTH (LANES < 32 ? LANES : 32)
#pragma unroll
  for (int off = WIDTH / 2; off > 0; off /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, off, WIDTH);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, off, WIDTH);
    take(ov, oi, bv, bi);
  }
#if LANES > 32
  __shared__ float warp_v[ROWS][LANES / 32];
  __shared__ int warp_i[ROWS][LANES / 32];
  if (lane % 32 == 0) {
    warp_v[slot][lane / 32] = bv;
    warp_i[slot][lane / 32] = bi;
  }
  __syncthreads();
  if (lane == 0)
    for (int k = 1; k < LANES / 32; ++k) take(warp_v[slot][k], warp_i[slot][k], bv, bi);
#endif
#endif
  if (lane == 0 && r < rows) {
    best_idx[r] = bi;
    best_val[r] = bv;
  }
}
