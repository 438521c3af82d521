// y = W x for 4-bit codes packed eight to a u32 word (low nibble first) with a float scale
// per group of 32 columns of a row; cols a multiple of 32. Expert parameterization
// (hand-written): LANES lanes per row (a group within a warp: threadIdx.x; its xor
// shuffles stay in the group), ROWS rows per block (threadIdx.y), VEC words per load
// (uint2 / uint4: a 16-byte load is exactly one group of 32 codes; a row of cols / 8 words
// starts 16-byte aligned since cols is a multiple of 32), UNROLL vectors loaded per lane
// before any is decoded (more loads in flight). x comes in float4 pairs through the
// read-only cache, and a word's eight products are summed before its scale multiplies
// them. A row group past the last row runs with no words (its warp's shuffles need every
// lane) and writes nothing.
// Launch: grid = ceil(rows / ROWS), block = (LANES, ROWS).
// Defaults: the kernel as written's launch (a warp a row, eight rows a block, word loads).
#ifndef LANES
#define LANES 32
#endif
#ifndef ROWS
#define ROWS 8
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define GROUP 32

#if VEC == 4
typedef uint4 vec_t;
#elif VEC == 2
typedef uint2 vec_t;
#else
typedef unsigned int vec_t;
#endif

// sum over the word's eight columns of (code - 8) * x, times the scale of its group
__device__ __forceinline__ float word_dot(unsigned int q, float s, const float* xw) {
  const float4 lo = __ldg(reinterpret_cast<const float4*>(xw));
  const float4 hi = __ldg(reinterpret_cast<const float4*>(xw) + 1);
  const float xs[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  float part = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) part += ((float)((q >> (4 * j)) & 0xFu) - 8.0f) * xs[j];
  return s * part;
}

// word w0 .. w0 + VEC - 1 of a row, loaded as one vector
__device__ __forceinline__ float vec_dot(vec_t v, int w0, const float* srow, const float* x) {
  const unsigned int* q = reinterpret_cast<const unsigned int*>(&v);
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    const int w = w0 + k;
    acc += word_dot(q[k], __ldg(srow + w * 8 / GROUP), x + w * 8);
  }
  return acc;
}

extern "C" __global__ void __launch_bounds__(LANES * ROWS)
gemv_q4_rows(float* __restrict__ y, const unsigned int* __restrict__ wq,
             const float* __restrict__ scales, const float* __restrict__ x, int rows,
             int cols) {
  const int lane = threadIdx.x;
  const int row = blockIdx.x * ROWS + threadIdx.y;
  const bool valid = row < rows;
  const int words = valid ? cols / 8 : 0;
  const size_t at = (size_t)(valid ? row : 0);
  const vec_t* wrow = reinterpret_cast<const vec_t*>(wq + at * (cols / 8));
  const float* srow = scales + at * (cols / GROUP);
  const int nv = words / VEC;  // VEC divides words: words is a multiple of 4
  float acc = 0.0f;
  int g = lane;
  for (; g + (UNROLL - 1) * LANES < nv; g += UNROLL * LANES) {
    vec_t v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(wrow + g + u * LANES);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += vec_dot(v[u], (g + u * LANES) * VEC, srow, x);
  }
  for (; g < nv; g += LANES) acc += vec_dot(__ldg(wrow + g), g * VEC, srow, x);
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, off, LANES);
  if (valid && lane == 0) y[row] = acc;
}
