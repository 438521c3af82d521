// sums[s] = the sum of values[offsets[s] .. offsets[s+1]), 0 for an empty segment.
// Expert parameterization (hand-written): LANES lanes a segment (short segments leave
// fewer lanes idle), THREADS threads a block (THREADS / LANES segments), UNROLL loads in
// flight a lane, and VEC 4 reads a segment's 16-byte-aligned middle as float4 (the head
// before the first aligned element and the tail after the last whole quad one float at a
// time). Lanes past the last segment walk an empty range, so every lane of a warp reaches
// the shuffles; the lanes of a segment fold with xor shuffles within their LANES.
// Launch: grid = ceil(segments / (THREADS / LANES)), block = THREADS.
// Defaults: the kernel as written (a warp a segment, 8 a block, one float a load).
#ifndef THREADS
#define THREADS 256
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef VEC
#define VEC 1
#endif
#define SEGS_PER_BLOCK (THREADS / LANES)

// the sum over elements lane, lane + LANES, ... of [first, last) of p, UNROLL loads at a time
template <typename T>
__device__ __forceinline__ float lane_sum(const T* __restrict__ p, int first, int last,
                                          int lane) {
  float s = 0.0f;
  int i = first + lane;
  for (; i + (UNROLL - 1) * LANES < last; i += UNROLL * LANES) {
    T v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(p + i + u * LANES);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const float* e = reinterpret_cast<const float*>(&v[u]);
#pragma unroll
      for (int k = 0; k < (int)(sizeof(T) / sizeof(float)); ++k) s += e[k];
    }
  }
  for (; i < last; i += LANES) {
    const T v = __ldg(p + i);
    const float* e = reinterpret_cast<const float*>(&v);
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / sizeof(float)); ++k) s += e[k];
  }
  return s;
}

extern "C" __global__ void __launch_bounds__(THREADS)
segment_sums(float* __restrict__ sums, const float* __restrict__ values,
             const int* __restrict__ offsets, int segments) {
  const int lane = threadIdx.x % LANES;
  const int seg = blockIdx.x * SEGS_PER_BLOCK + threadIdx.x / LANES;
  int begin = 0, end = 0;
  if (seg < segments) {
    begin = __ldg(offsets + seg);
    end = __ldg(offsets + seg + 1);
  }
#if VEC == 4
  const int head = min(end, (begin + 3) & ~3);  // the first 16-byte-aligned element
  const int quads = end / 4;                     // whole quads end before this one
  float s = lane_sum(values, begin, head, lane);
  if (head / 4 < quads)
    s += lane_sum(reinterpret_cast<const float4*>(values), head / 4, quads, lane);
  s += lane_sum(values, max(head, quads * 4), end, lane);
#else
  float s = lane_sum(values, begin, end, lane);
#endif
#pragma unroll
  for (int step = LANES / 2; step > 0; step /= 2) s += __shfl_xor_sync(0xffffffffu, s, step, LANES);
  if (lane == 0 && seg < segments) sums[seg] = s;
}
