// A respelling of jacobi7_poisson_flat's family (issue 28, session 35): one explicit heat
// step, u + h2 (the six neighbours' sum - 6 u) summed in double, the faces kept. A flat
// launch with int indices: the split by repeated division and `idx - k * plane`, the
// neighbours addressed by coordinates through a macro, a guarded body (no early return).
#define AT(x, y, z) (((z) * ny + (y)) * nx + (x))

extern "C" __global__ void jacobi7_poisson_flat(float *u_new, const float *u, const float *f,
                                                float h2, int nx, int ny, int nz)
{
    const int n = nx * ny * nz;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        const int plane = nx * ny;
        const int k = idx / nx / ny;
        const int rem = idx - k * plane;
        const int j = rem / nx;
        const int i = rem - j * nx;
        double v = u[AT(i, j, k)];
        if (i > 0 && j > 0 && k > 0 && i < nx - 1 && j < ny - 1 && k < nz - 1) {
            const double nb = (double)u[AT(i - 1, j, k)] + u[AT(i + 1, j, k)] +
                              u[AT(i, j - 1, k)] + u[AT(i, j + 1, k)] +
                              u[AT(i, j, k - 1)] + u[AT(i, j, k + 1)];
            v = v + (double)h2 * (nb - 6.0 * v) + 1e-3 * f[idx];
        }
        u_new[AT(i, j, k)] = (float)v;
    }
}
