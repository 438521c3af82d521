// One Jacobi sweep for the 3-D Poisson problem -lap(u) = f on a box of nx x ny x nz
// points (spacing h, h2 = h * h): an interior point takes the mean of its six neighbours
// plus h2 / 6 times f; a point on any face of the box keeps its (Dirichlet) value. A flat
// 1-D launch over every point: the linear index is split into (i, j, k) with / and %,
// neighbours addressed through the strides sx, sy, sz; an early return past the end.
// Launch: grid = ((nx * ny * nz + 255) / 256), block = (256).

extern "C" __global__ void jacobi7_poisson_flat(float *u_new, const float *u, const float *f,
                                                float h2, int nx, int ny, int nz)
{
    const size_t total = (size_t)nx * ny * nz;
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total)
        return;

    const size_t sx = 1, sy = nx, sz = (size_t)nx * ny;
    const int i = idx % nx;
    const int j = (idx / nx) % ny;
    const int k = idx / sz;

    if (i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1) {
        u_new[idx] = u[idx];
        return;
    }
    const float nb = u[idx - sx] + u[idx + sx] + u[idx - sy] + u[idx + sy] + u[idx - sz] +
                     u[idx + sz];
    u_new[idx] = (nb + h2 * f[idx]) * (1.0f / 6.0f);
}
