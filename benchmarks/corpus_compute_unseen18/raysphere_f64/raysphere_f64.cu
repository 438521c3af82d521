// out[i] = distance along ray i to the nearest of the 64 spheres it hits, or -1 when it hits
// none, computed in double. rays[i] = (origin x, y, z, unit direction x, y, z); spheres[k] =
// (centre x, y, z, radius). One ray a thread, 128 threads a block.
// Launch: grid = ((n + 127) / 128), block = (128).

#define NUM_SPHERES 64

struct RayLaunch {
  static constexpr int kThreads = 128;
};

extern "C" __global__ void raysphere_f64(float* out, const float* rays, const float* spheres,
                                         unsigned n) {
  const size_t i = (size_t)blockIdx.x * RayLaunch::kThreads + threadIdx.x;
  if (i >= n) return;
  const float* r = rays + 6 * i;
  const double ox = r[0], oy = r[1], oz = r[2], dx = r[3], dy = r[4], dz = r[5];
  auto hit = [&](const float* s) -> double {
    const double px = ox - s[0], py = oy - s[1], pz = oz - s[2];
    const double rad = s[3];
    const double b = px * dx + py * dy + pz * dz;
    const double c = px * px + py * py + pz * pz - rad * rad;
    const double disc = b * b - c;
    return disc < 0.0 ? -1.0 : -b - sqrt(disc);
  };
  double best = -1.0;
  int k = 0;
  for (;;) {
    if (k == NUM_SPHERES) break;
    const double t = hit(spheres + 4 * k);
    best = t > 0.0 && (best < 0.0 || t < best) ? t : best;
    ++k;
  }
  out[i] = (float)best;
}
