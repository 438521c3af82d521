// out = a 7-point average of in over the interior, in copied on the faces; a 2-D grid of
// (x, y) columns, each thread marching z
extern "C" __global__ void k(float* out, const float* in, int nx, int ny, int nz) {
  const int x = blockIdx.x * 32 + threadIdx.x;
  const int y = blockIdx.y * 8 + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const size_t plane = (size_t)nx * ny;
  for (int z = 0; z < nz; ++z) {
    const size_t c = z * plane + (size_t)y * nx + x;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
      out[c] = in[c];
      continue;
    }
    out[c] = 0.4f * in[c] + 0.1f * (in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx] +
                                    in[c - plane] + in[c + plane]);
  }
}
