// out[i] = great-circle distance (unit sphere, radians) from point a[i] to the nearest point
// of b, by the haversine formula. Points are (latitude, longitude) pairs in radians. One
// point of a a thread, 256 threads a block; the block walks b in tiles of 256 points staged
// in shared memory with their cosines.
// Launch: grid = ((na + 255) / 256), block = (256).

namespace geo {

enum { BLOCK = 256 };

__device__ inline float hav_dist(float lat1, float lon1, float c1, float lat2, float lon2,
                                 float c2) {
  const float s1 = sinf(0.5f * (lat2 - lat1));
  const float s2 = sinf(0.5f * (lon2 - lon1));
  const float h = s1 * s1 + c1 * c2 * s2 * s2;
  return 2.0f * asinf(sqrtf(h < 1.0f ? h : 1.0f));
}

template <int TILE>
__device__ void nearest_body(float* out, const float* a, const float* b, int na, int nb) {
  __shared__ float lat_s[TILE], lon_s[TILE], cos_s[TILE];
  const int i = blockIdx.x * TILE + threadIdx.x;
  const bool live = i < na;
  const float lat = live ? a[2 * i] : 0.0f;
  const float lon = live ? a[2 * i + 1] : 0.0f;
  const float c = cosf(lat);
  float best = 4.0f;  // above pi, the farthest two points can be
  for (int start = 0; start < nb; start += TILE) {
    const int j = start + threadIdx.x;
    if (j < nb) {
      lat_s[threadIdx.x] = b[2 * j];
      lon_s[threadIdx.x] = b[2 * j + 1];
      cos_s[threadIdx.x] = cosf(b[2 * j]);
    }
    __syncthreads();
    const int count = nb - start < TILE ? nb - start : TILE;
    for (int k = 0; k < count; ++k)
      best = fminf(best, hav_dist(lat, lon, c, lat_s[k], lon_s[k], cos_s[k]));
    __syncthreads();
  }
  if (live) out[i] = best;
}

}  // namespace geo

extern "C" __global__ void haversine_nearest(float* out, const float* a, const float* b, int na,
                                             int nb) {
  geo::nearest_body<geo::BLOCK>(out, a, b, na, nb);
}
