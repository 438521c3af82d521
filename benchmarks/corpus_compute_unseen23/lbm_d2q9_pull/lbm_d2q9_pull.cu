/* One lattice-Boltzmann D2Q9 BGK step, pull scheme, periodic in x and y.
 * f_in and f_out hold 9 planes of nx * ny floats (plane q, then row y, then column x).
 * Velocities c_q: 0 (0,0), 1 (1,0), 2 (0,1), 3 (-1,0), 4 (0,-1), 5 (1,1), 6 (-1,1),
 * 7 (-1,-1), 8 (1,-1); weights w = 4/9, 1/9 (q = 1..4), 1/36 (q = 5..8).
 *   f_q = f_in_q(x - c_q)                        (streaming, wrapped)
 *   rho = sum f_q,  u = sum c_q f_q / rho,
 *   feq_q = w_q rho (1 + 3 c_q.u + 4.5 (c_q.u)^2 - 1.5 u.u),
 *   f_out_q(x) = f_q - omega (f_q - feq_q)       (collision)
 * One site a thread.
 * Launch: grid = ((nx + 31) / 32, (ny + 7) / 8), block = (32, 8). */

#define PLANE(q) ((size_t)(q) * nx * ny)
#define SITE(x, y) ((size_t)(y) * nx + (x))
#define W0 (4.0f / 9.0f)
#define W1 (1.0f / 9.0f)
#define W2 (1.0f / 36.0f)
#define RELAX(q, f, w, cu) \
    f_out[PLANE(q) + here] = (f) - omega * ((f) - (w) * rho * (1.0f + 3.0f * (cu) + 4.5f * (cu) * (cu) - usq))

extern "C" __global__ void lbm_d2q9_pull(float *f_out, const float *f_in, int nx, int ny, float omega)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;

    int xp = (x == nx - 1) ? 0 : x + 1;
    int xm = (x == 0) ? nx - 1 : x - 1;
    int yp = (y == ny - 1) ? 0 : y + 1;
    int ym = (y == 0) ? ny - 1 : y - 1;
    size_t here = SITE(x, y);

    float f0 = f_in[PLANE(0) + here];
    float f1 = f_in[PLANE(1) + SITE(xm, y)];
    float f2 = f_in[PLANE(2) + SITE(x, ym)];
    float f3 = f_in[PLANE(3) + SITE(xp, y)];
    float f4 = f_in[PLANE(4) + SITE(x, yp)];
    float f5 = f_in[PLANE(5) + SITE(xm, ym)];
    float f6 = f_in[PLANE(6) + SITE(xp, ym)];
    float f7 = f_in[PLANE(7) + SITE(xp, yp)];
    float f8 = f_in[PLANE(8) + SITE(xm, yp)];

    float rho = f0 + f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8;
    float ux = (f1 - f3 + f5 - f6 - f7 + f8) / rho;
    float uy = (f2 - f4 + f5 + f6 - f7 - f8) / rho;
    float usq = 1.5f * (ux * ux + uy * uy);

    RELAX(0, f0, W0, 0.0f);
    RELAX(1, f1, W1, ux);
    RELAX(2, f2, W1, uy);
    RELAX(3, f3, W1, -ux);
    RELAX(4, f4, W1, -uy);
    RELAX(5, f5, W2, ux + uy);
    RELAX(6, f6, W2, uy - ux);
    RELAX(7, f7, W2, -ux - uy);
    RELAX(8, f8, W2, ux - uy);
}
