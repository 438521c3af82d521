// One leapfrog step of the 2-D wave equation on an ny x nx float grid (x fastest) with the
// fourth-order 9-point star Laplacian (radius 2 along x and along y):
//   u_next = 2 u - u_prev + c2 * (L_x u + L_y u),
//   L_x u = (-u[x-2] + 16 u[x-1] - 30 u + 16 u[x+1] - u[x+2]) / 12, L_y alike,
// c2 = (c dt / h)^2. Points within 2 of an edge keep u (a fixed boundary).
// A 16 x 16 block stages its patch of u with a 2-point halo on each side (no corners: the
// star does not reach them) in shared memory: every thread loads its own point, the first
// two columns of threads the left and right halos, the first two rows the top and bottom.
// Launch: grid = ((nx + 15) / 16, (ny + 15) / 16), block = (16, 16).
#define R 2
#define BS 16

__device__ float load_or_zero(const float* u, int y, int x, int ny, int nx) {
  return (y >= 0 && y < ny && x >= 0 && x < nx) ? u[(size_t)y * nx + x] : 0.0f;
}

extern "C" __global__ void wave2d_o4(float* u_next, const float* u, const float* u_prev, float c2,
                                     int ny, int nx) {
  __shared__ float s[BS + 2 * R][BS + 2 * R];
  const int lx = threadIdx.x + R, ly = threadIdx.y + R;
  const int gx = blockIdx.x * BS + threadIdx.x, gy = blockIdx.y * BS + threadIdx.y;
  s[ly][lx] = load_or_zero(u, gy, gx, ny, nx);
  if (threadIdx.x < R) {
    s[ly][lx - R] = load_or_zero(u, gy, gx - R, ny, nx);
    s[ly][lx + BS] = load_or_zero(u, gy, gx + BS, ny, nx);
  }
  if (threadIdx.y < R) {
    s[ly - R][lx] = load_or_zero(u, gy - R, gx, ny, nx);
    s[ly + BS][lx] = load_or_zero(u, gy + BS, gx, ny, nx);
  }
  __syncthreads();
  if (gx >= nx || gy >= ny) return;
  const size_t idx = (size_t)gy * nx + gx;
  const float c = s[ly][lx];
  if (gx < R || gy < R || gx >= nx - R || gy >= ny - R) {
    u_next[idx] = c;
    return;
  }
  const float lap = (-(s[ly][lx - 2] + s[ly][lx + 2]) + 16.0f * (s[ly][lx - 1] + s[ly][lx + 1]) -
                     (s[ly - 2][lx] + s[ly + 2][lx]) + 16.0f * (s[ly - 1][lx] + s[ly + 1][lx]) -
                     60.0f * c) / 12.0f;
  u_next[idx] = 2.0f * c - u_prev[idx] + c2 * lap;
}
