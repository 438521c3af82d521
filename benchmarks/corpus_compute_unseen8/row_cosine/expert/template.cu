// Row-wise cosine similarity of a, b [rows, cols] fp32. Expert parameterization
// (hand-written): LANES lanes per row (a group within a warp; its xor shuffles stay in the
// group), ROWS rows per block (THREADS = LANES * ROWS), VEC floats per load (float2 / float4
// when cols % VEC == 0, so every row starts aligned; scalar loads otherwise) and UNROLL
// vectors of each matrix loaded per lane before any is added (more loads in flight). A
// group past the last row runs with an empty row (its warp's shuffles need every lane) and
// writes nothing.
// Launch: grid = ceil(rows / ROWS), block = LANES * ROWS.
// Defaults: the kernel as written (a warp a row, four rows a block, scalar loads).
#ifndef LANES
#define LANES 32
#endif
#ifndef ROWS
#define ROWS 4
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#define THREADS (LANES * ROWS)

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

struct Sums { float ab, aa, bb; };

__device__ __forceinline__ void add(Sums& s, float u, float v) {
  s.ab += u * v;
  s.aa += u * u;
  s.bb += v * v;
}
__device__ __forceinline__ void add(Sums& s, float2 u, float2 v) {
  add(s, u.x, v.x);
  add(s, u.y, v.y);
}
__device__ __forceinline__ void add(Sums& s, float4 u, float4 v) {
  add(s, u.x, v.x);
  add(s, u.y, v.y);
  add(s, u.z, v.z);
  add(s, u.w, v.w);
}

extern "C" __global__ void __launch_bounds__(THREADS)
row_cosine(float* __restrict__ cosv, const float* __restrict__ a, const float* __restrict__ b,
           int rows, int cols) {
  const int lane = threadIdx.x % LANES;
  const int row = blockIdx.x * ROWS + threadIdx.x / LANES;
  const bool valid = row < rows;
  const int len = valid ? cols : 0;
  const float* ar = a + (size_t)(valid ? row : 0) * cols;
  const float* br = b + (size_t)(valid ? row : 0) * cols;
  Sums s = {0.0f, 0.0f, 0.0f};
  if (len % VEC == 0) {
    const vec_t* av = reinterpret_cast<const vec_t*>(ar);
    const vec_t* bv = reinterpret_cast<const vec_t*>(br);
    const int nv = len / VEC;
    int g = lane;
    for (; g + (UNROLL - 1) * LANES < nv; g += UNROLL * LANES) {
      vec_t u[UNROLL], v[UNROLL];
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        u[k] = __ldg(av + g + k * LANES);
        v[k] = __ldg(bv + g + k * LANES);
      }
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) add(s, u[k], v[k]);
    }
    for (; g < nv; g += LANES) add(s, __ldg(av + g), __ldg(bv + g));
  } else {
    for (int c = lane; c < len; c += LANES) add(s, __ldg(ar + c), __ldg(br + c));
  }
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) {
    s.ab += __shfl_xor_sync(0xffffffffu, s.ab, off, LANES);
    s.aa += __shfl_xor_sync(0xffffffffu, s.aa, off, LANES);
    s.bb += __shfl_xor_sync(0xffffffffu, s.bb, off, LANES);
  }
  if (valid && lane == 0) cosv[row] = s.ab / fmaxf(sqrtf(s.aa) * sqrtf(s.bb), 1e-20f);
}
