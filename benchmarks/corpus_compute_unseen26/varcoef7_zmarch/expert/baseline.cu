// One explicit step of variable-coefficient diffusion on a box, 7 points: at an interior
// point out = u + dt * the sum over its six neighbours of kf * (u_nb - u), the face's
// coefficient kf = 0.5 * (k + k_nb); a point on any face of the box copies u. A thread owns
// an (x, y) column and marches z, keeping u and k of the planes below, at and above the
// point in registers; x and y neighbours come through L1.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4), block = (32, 4).

#define IDX(x, y, z) (((size_t)(z) * ny + (y)) * nx + (x))

extern "C" __global__ void varcoef7_zmarch(float *out, const float *u, const float *k, float dt,
                                           int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    bool side = x == 0 || y == 0 || x == nx - 1 || y == ny - 1;

    float u_dn = u[IDX(x, y, 0)], k_dn = k[IDX(x, y, 0)];
    out[IDX(x, y, 0)] = u_dn;
    float u_c = u[IDX(x, y, 1)], k_c = k[IDX(x, y, 1)];
    for (int z = 1; z < nz - 1; ++z) {
        float u_up = u[IDX(x, y, z + 1)], k_up = k[IDX(x, y, z + 1)];
        size_t c = IDX(x, y, z);
        if (side) {
            out[c] = u_c;
        } else {
            float flux = 0.5f * (k_c + k[c - 1]) * (u[c - 1] - u_c);
            flux += 0.5f * (k_c + k[c + 1]) * (u[c + 1] - u_c);
            flux += 0.5f * (k_c + k[c - nx]) * (u[c - nx] - u_c);
            flux += 0.5f * (k_c + k[c + nx]) * (u[c + nx] - u_c);
            flux += 0.5f * (k_c + k_dn) * (u_dn - u_c);
            flux += 0.5f * (k_c + k_up) * (u_up - u_c);
            out[c] = u_c + dt * flux;
        }
        u_dn = u_c;
        k_dn = k_c;
        u_c = u_up;
        k_c = k_up;
    }
    out[IDX(x, y, nz - 1)] = u_c;
}
