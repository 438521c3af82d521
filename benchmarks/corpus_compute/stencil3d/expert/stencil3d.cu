// One 7-point Jacobi step on an nz x ny x nx float grid (x fastest); the boundary is copied
// through. One point per thread on a 3-D grid.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4, (nz + 3) / 4), block = (32, 4, 4).
extern "C" __global__ void stencil3d(float* out, const float* in, int nx, int ny, int nz) {
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 4 + threadIdx.y;
  int z = blockIdx.z * 4 + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  long long plane = (long long)nx * ny;
  long long i = z * plane + (long long)y * nx + x;
  if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
    out[i] = in[i];
  } else {
    out[i] = 0.4f * in[i] + 0.1f * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx] +
                                    in[i - plane] + in[i + plane]);
  }
}
