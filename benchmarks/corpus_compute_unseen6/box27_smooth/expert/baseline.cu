// One smoothing pass of a 27-point box stencil on an nx x ny x nz grid (x fastest): an
// interior cell becomes the weighted sum of its 3 x 3 x 3 neighbourhood, the weight set by
// how many of the three offsets are non-zero (the centre, 6 faces, 12 edges, 8 corners; the
// weights add up to 1); cells of the boundary layer keep their values. A 1-D block of 128
// threads along x; blockIdx.y and blockIdx.z are the row and the plane.
// Launch: grid = ((nx + 127) / 128, ny, nz), block = 128.
__device__ __forceinline__ float weight_for(int nonzero_offsets) {
  switch (nonzero_offsets) {
    case 0: return 0.28f;   // centre
    case 1: return 0.06f;   // face
    case 2: return 0.02f;   // edge
    default: return 0.015f; // corner
  }
}

extern "C" __global__ void box27_smooth(float* out, const float* in, int nx, int ny, int nz) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  const int j = blockIdx.y;
  const int k = blockIdx.z;
  if (i >= nx) return;
  const long plane = (long)nx * ny;
  const long c = k * plane + (long)j * nx + i;
  if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 || k == nz - 1) {
    out[c] = in[c];
    return;
  }
  float acc = 0.0f;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
        acc += weight_for(nonzero) * in[c + dz * plane + (long)dy * nx + dx];
      }
  out[c] = acc;
}
