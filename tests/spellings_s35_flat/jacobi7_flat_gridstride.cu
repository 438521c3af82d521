// A respelling of jacobi7_poisson_flat (issue 28, session 35): a grid-stride loop (run once a
// thread at the launch as written), the plane split off first and the rest by subtraction
// (`idx - k * nx * ny - j * nx`), the face copy and the sweep as the two sides of an if.
extern "C" __global__ void jacobi7_poisson_flat(float *u_new, const float *u, const float *f,
                                                float h2, int nx, int ny, int nz)
{
    const size_t total = (size_t)nx * ny * nz;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)blockDim.x * gridDim.x) {
        const int k = (int)(idx / ((size_t)nx * ny));
        const int j = (int)((idx - (size_t)k * nx * ny) / nx);
        const int i = (int)(idx - (size_t)k * nx * ny - (size_t)j * nx);
        if (i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1) {
            u_new[idx] = u[idx];
        } else {
            const float xs = u[idx - 1] + u[idx + 1];
            const float ys = u[idx - nx] + u[idx + nx];
            const float zs = u[idx - (size_t)nx * ny] + u[idx + (size_t)nx * ny];
            u_new[idx] = (xs + ys + zs + h2 * f[idx]) * (1.0f / 6.0f);
        }
    }
}
