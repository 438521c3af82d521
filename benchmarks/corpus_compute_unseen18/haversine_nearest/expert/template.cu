// Nearest great-circle (haversine) distance from each point of a to the points of b.
// Expert parameterization (hand-written): THREADS a block, ITEMS points of a a thread
// strided by THREADS (independent sine chains sharing each staged point), TILE points of b
// staged in shared memory a round, and HMIN=1 keeping the
// smallest h and taking the arcsine once at the end (the arcsine of a root is monotone).
// Launch: grid = ceil(na / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written.

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef TILE
#define TILE 256
#endif
#ifndef HMIN
#define HMIN 0
#endif

__device__ __forceinline__ float hav_h(float lat1, float lon1, float c1, float lat2, float lon2,
                                       float c2) {
  const float s1 = sinf(0.5f * (lat2 - lat1));
  const float s2 = sinf(0.5f * (lon2 - lon1));
  return s1 * s1 + c1 * c2 * s2 * s2;
}

__device__ __forceinline__ float h_to_dist(float h) {
  return 2.0f * asinf(sqrtf(h < 1.0f ? h : 1.0f));
}

extern "C" __global__ void __launch_bounds__(THREADS) haversine_nearest(
    float* __restrict__ out, const float* __restrict__ a, const float* __restrict__ b, int na,
    int nb) {
  __shared__ float lat_s[TILE], lon_s[TILE], cos_s[TILE];
  const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
  float lat[ITEMS], lon[ITEMS], c[ITEMS], best[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = base + j * THREADS;
    lat[j] = i < na ? a[2 * i] : 0.0f;
    lon[j] = i < na ? a[2 * i + 1] : 0.0f;
    c[j] = cosf(lat[j]);
    best[j] = HMIN ? 2.0f : 4.0f;
  }
  for (int start = 0; start < nb; start += TILE) {
    for (int t = threadIdx.x; t < TILE; t += THREADS) {
      const int j = start + t;
      if (j < nb) {
        const float2 p = reinterpret_cast<const float2*>(b)[j];
        lat_s[t] = p.x;
        lon_s[t] = p.y;
        cos_s[t] = cosf(p.x);
      }
    }
    __syncthreads();
    const int count = nb - start < TILE ? nb - start : TILE;
    for (int k = 0; k < count; ++k) {
      const float la = lat_s[k], lo = lon_s[k], ck = cos_s[k];
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const float h = hav_h(lat[j], lon[j], c[j], la, lo, ck);
        best[j] = fminf(best[j], HMIN ? h : h_to_dist(h));
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = base + j * THREADS;
    if (i < na) out[i] = HMIN ? h_to_dist(best[j]) : best[j];
  }
}
