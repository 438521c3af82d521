// Integrates the Lorenz system (sigma = 10, beta = 8/3, rho per trajectory) from each
// starting state for 256 explicit-midpoint (RK2) steps of 0.002, in double.
// state[i] = (x, y, z) as floats, rho[i] per trajectory; out[i] = the final (x, y, z).
// One trajectory a thread, 256 threads a block.
// Launch: grid = ((n + 255) / 256), block = (256).

#define LZ_THREADS 256
#define LZ_STEPS 256
#define LZ_SIGMA 10.0
#define LZ_BETA (8.0 / 3.0)
#define LZ_DT 0.002

__device__ __forceinline__ void lorenz_rhs(double x, double y, double z, double rho,
                                           double& fx, double& fy, double& fz) {
  fx = LZ_SIGMA * (y - x);
  fy = x * (rho - z) - y;
  fz = x * y - LZ_BETA * z;
}

extern "C" __global__ void __launch_bounds__(LZ_THREADS)
lorenz_rk2_f64(float* __restrict__ out, const float* __restrict__ state,
               const float* __restrict__ rho, int n) {
  const int i = blockIdx.x * LZ_THREADS + threadIdx.x;
  if (i >= n) return;
  double x = __ldg(state + 3 * i);
  double y = __ldg(state + 3 * i + 1);
  double z = __ldg(state + 3 * i + 2);
  const double r = __ldg(rho + i);
#pragma unroll 2
  for (int step = 0; step < LZ_STEPS; ++step) {
    double kx, ky, kz;
    lorenz_rhs(x, y, z, r, kx, ky, kz);
    const double mx = x + 0.5 * LZ_DT * kx;
    const double my = y + 0.5 * LZ_DT * ky;
    const double mz = z + 0.5 * LZ_DT * kz;
    lorenz_rhs(mx, my, mz, r, kx, ky, kz);
    x += LZ_DT * kx;
    y += LZ_DT * ky;
    z += LZ_DT * kz;
  }
  out[3 * i] = (float)x;
  out[3 * i + 1] = (float)y;
  out[3 * i + 2] = (float)z;
}
