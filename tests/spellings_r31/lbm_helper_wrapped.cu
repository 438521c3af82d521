// D2Q9 lattice-Boltzmann, one BGK step with pull streaming, periodic boundaries.
// Nine planes of ny x nx floats: f[q][y][x]. Velocities
//   q: 0 (0,0) 1 (1,0) 2 (0,1) 3 (-1,0) 4 (0,-1) 5 (1,1) 6 (-1,1) 7 (-1,-1) 8 (1,-1)
// with weights 4/9, 1/9 (1..4), 1/36 (5..8). One lattice site per thread.

__device__ __forceinline__ float bgk(float f, float w, float rho, float cu, float usq,
                                     float omega) {
  return f - omega * (f - w * rho * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq));
}

extern "C" __global__ void lbm_d2q9_pull(float* f_out, const float* f_in, int nx, int ny,
                                         float omega) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < nx && y < ny) {
    const size_t plane = (size_t)nx * ny;
    const int east = x + 1 == nx ? 0 : x + 1;
    const int west = x == 0 ? nx - 1 : x - 1;
    const int north = y + 1 == ny ? 0 : y + 1;
    const int south = y == 0 ? ny - 1 : y - 1;
    const size_t c = (size_t)y * nx + x;
    const size_t rs = (size_t)south * nx;
    const size_t ry = (size_t)y * nx;
    const size_t rn = (size_t)north * nx;

    const float f0 = f_in[c];
    const float f1 = f_in[1 * plane + ry + west];
    const float f2 = f_in[2 * plane + rs + x];
    const float f3 = f_in[3 * plane + ry + east];
    const float f4 = f_in[4 * plane + rn + x];
    const float f5 = f_in[5 * plane + rs + west];
    const float f6 = f_in[6 * plane + rs + east];
    const float f7 = f_in[7 * plane + rn + east];
    const float f8 = f_in[8 * plane + rn + west];

    const float rho = f0 + f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8;
    const float ux = (f1 - f3 + f5 - f6 - f7 + f8) / rho;
    const float uy = (f2 - f4 + f5 + f6 - f7 - f8) / rho;
    const float usq = 1.5f * (ux * ux + uy * uy);

    const float w0 = 4.0f / 9.0f, w1 = 1.0f / 9.0f, w2 = 1.0f / 36.0f;
    f_out[c] = bgk(f0, w0, rho, 0.0f, usq, omega);
    f_out[1 * plane + c] = bgk(f1, w1, rho, ux, usq, omega);
    f_out[2 * plane + c] = bgk(f2, w1, rho, uy, usq, omega);
    f_out[3 * plane + c] = bgk(f3, w1, rho, -ux, usq, omega);
    f_out[4 * plane + c] = bgk(f4, w1, rho, -uy, usq, omega);
    f_out[5 * plane + c] = bgk(f5, w2, rho, ux + uy, usq, omega);
    f_out[6 * plane + c] = bgk(f6, w2, rho, uy - ux, usq, omega);
    f_out[7 * plane + c] = bgk(f7, w2, rho, -ux - uy, usq, omega);
    f_out[8 * plane + c] = bgk(f8, w2, rho, ux - uy, usq, omega);
  }
}
