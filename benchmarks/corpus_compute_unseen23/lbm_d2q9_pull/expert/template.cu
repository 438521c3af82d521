/* One lattice-Boltzmann D2Q9 BGK step, pull scheme, periodic in x and y; 9 planes of
 * nx * ny floats (plane q, row y, column x); c_q: 0 (0,0), 1 (1,0), 2 (0,1), 3 (-1,0),
 * 4 (0,-1), 5 (1,1), 6 (-1,1), 7 (-1,-1), 8 (1,-1); w = 4/9, 1/9, 1/36.
 *   f_q = f_in_q(x - c_q), rho = sum f_q, u = sum c_q f_q / rho,
 *   f_out_q = f_q - omega (f_q - w_q rho (1 + 3 c_q.u + 4.5 (c_q.u)^2 - 1.5 u.u)).
 * Expert parameterization (hand-written): BX x BY blocks, IX sites a thread along x
 * (strided by BX: each of the 18 streams stays coalesced), LDG=1 the loads through the
 * read-only cache (__ldg; the pointers are __restrict__ either way).
 * Launch: grid = (ceil(nx / (BX * IX)), ceil(ny / BY)), block = (BX, BY).
 * Defaults: the kernel as written (32 x 8 blocks, one site a thread, plain loads). */

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef IX
#define IX 1
#endif
#ifndef LDG
#define LDG 0
#endif

#if LDG
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

static __device__ __forceinline__ float relax(float f, float w, float cu, float rho, float usq,
                                              float omega)
{
    return f - omega * (f - w * rho * (1.0f + 3.0f * cu + 4.5f * cu * cu - usq));
}

extern "C" __global__ void __launch_bounds__(BX * BY)
lbm_d2q9_pull(float *__restrict__ f_out, const float *__restrict__ f_in, int nx, int ny,
              float omega)
{
    const int y = blockIdx.y * BY + threadIdx.y;
    if (y >= ny)
        return;
    const size_t plane = (size_t)nx * ny;
    const int yp = (y == ny - 1) ? 0 : y + 1;
    const int ym = (y == 0) ? ny - 1 : y - 1;
    const float *row = f_in + (size_t)y * nx;
    const float *up = f_in + (size_t)ym * nx;    // the row y - 1 (pulled by c_y = +1)
    const float *down = f_in + (size_t)yp * nx;  // the row y + 1 (pulled by c_y = -1)
    const float W0 = 4.0f / 9.0f, W1 = 1.0f / 9.0f, W2 = 1.0f / 36.0f;

#pragma unroll
    for (int k = 0; k < IX; ++k) {
        const int x = blockIdx.x * (BX * IX) + k * BX + threadIdx.x;
        if (x >= nx)
            break;
        const int xp = (x == nx - 1) ? 0 : x + 1;
        const int xm = (x == 0) ? nx - 1 : x - 1;

        const float f0 = LOAD(row + x);
        const float f1 = LOAD(row + 1 * plane + xm);
        const float f2 = LOAD(up + 2 * plane + x);
        const float f3 = LOAD(row + 3 * plane + xp);
        const float f4 = LOAD(down + 4 * plane + x);
        const float f5 = LOAD(up + 5 * plane + xm);
        const float f6 = LOAD(up + 6 * plane + xp);
        const float f7 = LOAD(down + 7 * plane + xp);
        const float f8 = LOAD(down + 8 * plane + xm);

        const float rho = f0 + f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8;
        const float ux = (f1 - f3 + f5 - f6 - f7 + f8) / rho;
        const float uy = (f2 - f4 + f5 + f6 - f7 - f8) / rho;
        const float usq = 1.5f * (ux * ux + uy * uy);

        float *o = f_out + (size_t)y * nx + x;
        o[0] = relax(f0, W0, 0.0f, rho, usq, omega);
        o[1 * plane] = relax(f1, W1, ux, rho, usq, omega);
        o[2 * plane] = relax(f2, W1, uy, rho, usq, omega);
        o[3 * plane] = relax(f3, W1, -ux, rho, usq, omega);
        o[4 * plane] = relax(f4, W1, -uy, rho, usq, omega);
        o[5 * plane] = relax(f5, W2, ux + uy, rho, usq, omega);
        o[6 * plane] = relax(f6, W2, uy - ux, rho, usq, omega);
        o[7 * plane] = relax(f7, W2, -ux - uy, rho, usq, omega);
        o[8 * plane] = relax(f8, W2, ux - uy, rho, usq, omega);
    }
}
