// A respelling of jacobi7_poisson_flat (issue 28, session 35): each coordinate of the flat
// index from a helper function (`(idx / below) % extent`), two coordinates declared in one
// statement, size_t strides, __ldg reads, the bound test written `total <= idx`.
__device__ __forceinline__ int digit_of(size_t idx, size_t below, int extent)
{
    return (int)((idx / below) % extent);
}

extern "C" __global__ void jacobi7_poisson_flat(float *u_new, const float *u, const float *f,
                                                float h2, int nx, int ny, int nz)
{
    const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t total = (size_t)nx * ny * nz;
    if (total <= idx)
        return;
    const int px = digit_of(idx, 1, nx), py = digit_of(idx, nx, ny);
    const int pz = (int)(idx / ((size_t)nx * ny));
    const size_t plane = (size_t)nx * ny;
    const bool face = px == 0 || py == 0 || pz == 0 || px == nx - 1 || py == ny - 1 ||
                      pz == nz - 1;
    if (face) {
        u_new[idx] = __ldg(&u[idx]);
        return;
    }
    const float sides = __ldg(&u[idx - 1]) + __ldg(&u[idx + 1]);
    const float rows = u[idx - nx] + u[idx + nx];
    const float planes = u[idx - plane] + u[idx + plane];
    u_new[idx] = (sides + rows + planes + h2 * f[idx]) * (1.0f / 6.0f);
}
