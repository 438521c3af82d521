/* Lattice Boltzmann D2Q9, BGK collision after pull streaming, periodic box.
 * Layout: f[q * ny * nx + y * nx + x]. Weights 4/9, 1/9, 1/36. */

namespace d2q9 {
constexpr float kW0 = 4.0f / 9.0f;
constexpr float kW1 = 1.0f / 9.0f;
constexpr float kW2 = 1.0f / 36.0f;
}  // namespace d2q9

struct Moments {
  float rho, ux, uy, usq;
};

extern "C" __global__ void lbm_d2q9_pull(float *f_out, const float *f_in, int nx, int ny,
                                         float omega)
{
  int x = threadIdx.x + blockIdx.x * blockDim.x;
  int y = threadIdx.y + blockIdx.y * blockDim.y;
  if (x >= nx) return;
  if (y >= ny) return;

  const size_t n = (size_t)nx * ny;
  auto pull = [&](int q, int sx, int sy) {
    int xx = x - sx, yy = y - sy;
    if (xx < 0) xx = nx - 1;
    if (xx == nx) xx = 0;
    if (yy < 0) yy = ny - 1;
    if (yy == ny) yy = 0;
    return f_in[q * n + (size_t)yy * nx + xx];
  };

  float f[9];
  f[0] = pull(0, 0, 0);
  f[1] = pull(1, 1, 0);
  f[2] = pull(2, 0, 1);
  f[3] = pull(3, -1, 0);
  f[4] = pull(4, 0, -1);
  f[5] = pull(5, 1, 1);
  f[6] = pull(6, -1, 1);
  f[7] = pull(7, -1, -1);
  f[8] = pull(8, 1, -1);

  Moments m;
  m.rho = f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7] + f[8];
  m.ux = (f[1] - f[3] + f[5] - f[6] - f[7] + f[8]) / m.rho;
  m.uy = (f[2] - f[4] + f[5] + f[6] - f[7] - f[8]) / m.rho;
  m.usq = 1.5f * (m.ux * m.ux + m.uy * m.uy);

  auto relax = [&](int q, float w, float cu) {
    f_out[q * n + (size_t)y * nx + x] =
        f[q] - omega * (f[q] - w * m.rho * (1.0f + 3.0f * cu + 4.5f * cu * cu - m.usq));
  };
  relax(0, d2q9::kW0, 0.0f);
  relax(1, d2q9::kW1, m.ux);
  relax(2, d2q9::kW1, m.uy);
  relax(3, d2q9::kW1, -m.ux);
  relax(4, d2q9::kW1, -m.uy);
  relax(5, d2q9::kW2, m.ux + m.uy);
  relax(6, d2q9::kW2, m.uy - m.ux);
  relax(7, d2q9::kW2, -m.ux - m.uy);
  relax(8, d2q9::kW2, m.ux - m.uy);
}
