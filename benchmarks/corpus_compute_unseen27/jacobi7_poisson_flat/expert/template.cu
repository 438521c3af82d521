// One Jacobi sweep of the 3-D Poisson problem -lap(u) = f: (the six neighbours' sum +
// h2 f) / 6 at interior points, u kept on the box's faces.
// Expert parameterization (hand-written): a flat launch of THREADS-thread blocks, thread t
// owning XV adjacent x points of one (y, z-run): t splits into (x group, y, z run) with
// x groups fastest (a warp's loads stay coalesced); the XV points' shared x neighbours
// are read once (the register row), and the thread marches ZITEMS planes up z keeping u
// of the planes below, at and above in registers (each u value read once down a column);
// MINB blocks an SM asked of the compiler (__launch_bounds__' second argument).
// Launch: grid = ceil(ceil(nx / XV) * ny * ceil(nz / ZITEMS) / THREADS), block = (THREADS).
// Defaults: the kernel as written (256 threads, one point a thread).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef XV
#define XV 1
#endif
#ifndef ZITEMS
#define ZITEMS 1
#endif
#ifndef MINB
#define MINB 1
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
jacobi7_poisson_flat(float *__restrict__ u_new, const float *__restrict__ u,
                     const float *__restrict__ f, float h2, int nx, int ny, int nz)
{
    const int nxg = (nx + XV - 1) / XV;         // x groups a row
    const int nzg = (nz + ZITEMS - 1) / ZITEMS; // z runs a column
    const size_t t = (size_t)blockIdx.x * THREADS + threadIdx.x;
    if (t >= (size_t)nxg * ny * nzg)
        return;
    const int gx = (int)(t % nxg);
    const int j = (int)((t / nxg) % ny);
    const int kr = (int)(t / ((size_t)nxg * ny));
    const int x0 = gx * XV;
    const int z0 = kr * ZITEMS;
    const int z1 = min(z0 + ZITEMS, nz);
    const size_t sy = nx, sz = (size_t)nx * ny;
    const size_t col = (size_t)j * nx + x0; // (x0, j) in a plane
    const bool yface = j == 0 || j == ny - 1;

    float dn[XV], c[XV], up[XV];
#pragma unroll
    for (int q = 0; q < XV; ++q) {
        dn[q] = 0.0f;
        c[q] = 0.0f;
        if (x0 + q < nx) {
            if (z0 > 0)
                dn[q] = u[(size_t)(z0 - 1) * sz + col + q];
            c[q] = u[(size_t)z0 * sz + col + q];
        }
    }
    for (int z = z0; z < z1; ++z) {
        const size_t base = (size_t)z * sz + col;
#pragma unroll
        for (int q = 0; q < XV; ++q)
            up[q] = (x0 + q < nx && z + 1 < nz) ? u[base + sz + q] : 0.0f;
        const bool zface = z == 0 || z == nz - 1;
#pragma unroll
        for (int q = 0; q < XV; ++q) {
            const int x = x0 + q;
            if (x >= nx)
                continue;
            const size_t idx = base + q;
            if (yface || zface || x == 0 || x == nx - 1) {
                u_new[idx] = c[q];
                continue;
            }
            // an interior point's x + 1 is inside the row: its register when the thread holds it
            const float left = q > 0 ? c[q - 1] : u[idx - 1];
            const float right = q < XV - 1 ? c[q + 1] : u[idx + 1];
            const float nb = left + right + u[idx - sy] + u[idx + sy] + dn[q] + up[q];
            u_new[idx] = (nb + h2 * f[idx]) * (1.0f / 6.0f);
        }
#pragma unroll
        for (int q = 0; q < XV; ++q) {
            dn[q] = c[q];
            c[q] = up[q];
        }
    }
}
