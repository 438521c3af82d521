// out = c0 u + c1 (sum of the six neighbours at distance 1) + c2 (the six at distance 2),
// a 13-point 3-D star of order 2 over u [nz, ny, nx], zero outside the grid. One (x, y)
// column a thread of a 32 x 8 block, marching z with a while loop.
// Launch: grid = ((nx + 31) / 32, (ny + 7) / 8), block = (32, 8).

struct Grid {
  int nx, ny, nz;
  __device__ inline bool inside(int z, int y, int x) const {
    return x >= 0 && x < nx && y >= 0 && y < ny && z >= 0 && z < nz;
  }
  __device__ inline size_t index(int z, int y, int x) const {
    return ((size_t)z * ny + y) * nx + x;
  }
};

#define U(z, y, x) (g.inside(z, y, x) ? u[g.index(z, y, x)] : 0.0f)
#define RING(z, y, x, d) \
  (U(z, y, (x) - (d)) + U(z, y, (x) + (d)) + U(z, (y) - (d), x) + U(z, (y) + (d), x) + \
   U((z) - (d), y, x) + U((z) + (d), y, x))

extern "C" __global__ void star13_o2(float* out, const float* u, int nx, int ny, int nz,
                                     float c0, float c1, float c2) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const Grid g{nx, ny, nz};
  int z = 0;
  while (z < nz) {
    out[g.index(z, y, x)] = c0 * u[g.index(z, y, x)] + c1 * RING(z, y, x, 1) +
                            c2 * RING(z, y, x, 2);
    ++z;
  }
}
