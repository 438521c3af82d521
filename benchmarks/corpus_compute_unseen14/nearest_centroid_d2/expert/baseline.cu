// k-means assignment step, distances only: d2[i] = min over the 64 centroids c of
// |x[i] - c|^2 for points x [n, 4]. The centroids sit in constant memory (every thread of a
// warp reads the same one at a time); the distance is a lambda inside the kernel.
// One point per thread, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

#define NUM_CENTROIDS 64
#define DIM 4

__constant__ float centroids[NUM_CENTROIDS * DIM];

extern "C" __global__ void nearest_centroid_d2(float* __restrict__ d2,
                                               const float* __restrict__ x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* p = x + (size_t)i * DIM;
  const float p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3];
  auto dist2 = [&](int c) {
    const float* q = centroids + c * DIM;
    const float a = p0 - q[0], b = p1 - q[1], e = p2 - q[2], f = p3 - q[3];
    return a * a + b * b + e * e + f * f;
  };
  float best = dist2(0);
#pragma unroll 8
  for (int c = 1; c < NUM_CENTROIDS; ++c) best = fminf(best, dist2(c));
  d2[i] = best;
}
