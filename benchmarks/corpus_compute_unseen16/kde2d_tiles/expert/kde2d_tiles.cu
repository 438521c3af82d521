// Weighted 2-D Gaussian kernel density at query points:
//   density[q] = sum_j w[j] * exp(-|query[q] - pts[j]|^2 / (2 h^2)), h = 0.25.
// query [nq, 2] and pts [npts, 2] are interleaved x, y pairs read as float2. Each block of
// kTile threads walks the points in tiles of kTile staged in shared memory; one query a
// thread, summed in point order.
// Launch: grid = ((nq + 127) / 128), block = (128).

constexpr int kTile = 128;
constexpr float kInvTwoH2 = 8.0f;

extern "C" __global__ void kde2d_tiles(float* density, const float* query, const float* pts,
                                       const float* w, int nq, int npts) {
  __shared__ float2 tile_p[kTile];
  __shared__ float tile_w[kTile];
  const int q = blockIdx.x * kTile + threadIdx.x;
  float2 me = make_float2(0.0f, 0.0f);
  if (q < nq) me = reinterpret_cast<const float2*>(query)[q];
  float acc = 0.0f;
  for (int base = 0; base < npts; base += kTile) {
    const int j = base + threadIdx.x;
    if (j < npts) {
      tile_p[threadIdx.x] = reinterpret_cast<const float2*>(pts)[j];
      tile_w[threadIdx.x] = w[j];
    }
    __syncthreads();
    const int count = npts - base < kTile ? npts - base : kTile;
    const float2* p = tile_p;
    const float2* end = tile_p + count;
    const float* pw = tile_w;
    while (p < end) {
      const float dx = me.x - p->x;
      const float dy = me.y - p->y;
      acc += *pw * expf(-(dx * dx + dy * dy) * kInvTwoH2);
      ++p;
      ++pw;
    }
    __syncthreads();
  }
  if (q < nq) density[q] = acc;
}
