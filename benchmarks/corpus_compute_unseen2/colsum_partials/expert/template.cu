// colsum_partials: partial[chunk][col] = sum of mat[r][col] over the rows r of row chunk
// `chunk` (rows dealt round-robin over CHUNKS chunks, ROW_THREADS at a time). Expert
// parameterization (hand-written): a COLS_PER_BLOCK x ROW_THREADS block covers
// COLS_PER_BLOCK * VEC columns, each thread VEC adjacent ones (one float2 / float4 load
// when ncols % VEC == 0, else VEC scalar loads); UNROLL rows of the thread's share are
// loaded per step into their own accumulators; the ROW_THREADS sums of a column are
// folded through shared memory. CHUNKS partial rows are written (the buffer holds 256).
// Launch: grid = (ceil(ncols / (COLS_PER_BLOCK * VEC)), CHUNKS),
//         block = (COLS_PER_BLOCK, ROW_THREADS).
// Defaults: the kernel as written.
#ifndef COLS_PER_BLOCK
#define COLS_PER_BLOCK 32
#endif
#ifndef ROW_THREADS
#define ROW_THREADS 8
#endif
#ifndef CHUNKS
#define CHUNKS 64
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

// VEC adjacent floats from p (aligned to VEC floats when `packed`)
template <int V>
__device__ __forceinline__ void load_cols(float (&v)[V], const float* p, bool packed,
                                          int left) {
  if (V == 4 && packed) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
  } else if (V == 2 && packed) {
    const float2 q = *reinterpret_cast<const float2*>(p);
    v[0] = q.x; v[1] = q.y;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = e < left ? p[e] : 0.0f;
  }
}

extern "C" __global__ void __launch_bounds__(COLS_PER_BLOCK * ROW_THREADS)
colsum_partials(float* __restrict__ partial, const float* __restrict__ mat, int nrows,
                int ncols) {
  __shared__ float red[ROW_THREADS][COLS_PER_BLOCK * VEC];
  const int col = (blockIdx.x * COLS_PER_BLOCK + threadIdx.x) * VEC;
  const int left = ncols - col;  // columns of this thread inside the matrix (if < VEC)
  const bool packed = (ncols % VEC) == 0 && left >= VEC;
  float acc[UNROLL][VEC];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[u][e] = 0.0f;
  if (left > 0) {
    const int step = CHUNKS * ROW_THREADS;
    int r = blockIdx.y * ROW_THREADS + threadIdx.y;
    for (; r + (UNROLL - 1) * step < nrows; r += UNROLL * step) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        float v[VEC];
        load_cols<VEC>(v, mat + (size_t)(r + u * step) * ncols + col, packed, left);
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[u][e] += v[e];
      }
    }
    for (; r < nrows; r += step) {
      float v[VEC];
      load_cols<VEC>(v, mat + (size_t)r * ncols + col, packed, left);
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[0][e] += v[e];
    }
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += acc[u][e];
    red[threadIdx.y][threadIdx.x * VEC + e] = s;
  }
  __syncthreads();
  for (int half = ROW_THREADS / 2; half >= 1; half /= 2) {
    if (threadIdx.y < half) {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        red[threadIdx.y][threadIdx.x * VEC + e] += red[threadIdx.y + half][threadIdx.x * VEC + e];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0) {
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      if (e < left) partial[(size_t)blockIdx.y * ncols + col + e] = red[0][threadIdx.x * VEC + e];
  }
}
