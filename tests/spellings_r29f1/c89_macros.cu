/* star13_o2 respelled: C89 declarations first, an aggregate struct of sizes with one
   method, a multi-line macro for a plane's ring and a while walk down z. */
struct Dims {
  int sx, sy, sz;
  __device__ int offset(int z, int y, int x) const { return (z * sy + y) * sx + x; }
};

#define AT(z, y, x) \
  ((x) >= 0 && (x) < nx && (y) >= 0 && (y) < ny && (z) >= 0 && (z) < nz \
       ? u[d.offset(z, y, x)] : 0.0f)

extern "C" __global__ void star13_o2(float* out, const float* u, int nx, int ny, int nz,
                                     float c0, float c1, float c2) {
  int x, y, z;
  float near, far;
  x = blockIdx.x * blockDim.x + threadIdx.x;
  y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  Dims d = {nx, ny, nz};
  z = 0;
  while (z < nz) {
    near = AT(z, y, x - 1) + AT(z, y, x + 1) + AT(z, y - 1, x) + AT(z, y + 1, x) +
           AT(z - 1, y, x) + AT(z + 1, y, x);
    far = AT(z, y, x - 2) + AT(z, y, x + 2) + AT(z, y - 2, x) + AT(z, y + 2, x) +
          AT(z - 2, y, x) + AT(z + 2, y, x);
    out[d.offset(z, y, x)] = c0 * u[d.offset(z, y, x)] + c1 * near + c2 * far;
    ++z;
  }
}
