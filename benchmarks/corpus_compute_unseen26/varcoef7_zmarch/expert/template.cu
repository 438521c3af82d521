// One explicit step of variable-coefficient diffusion on a box, 7 points (face
// coefficients 0.5 (k + k_nb)); the box's faces copy u.
// Expert parameterization (hand-written): BX x BY threads a block, each an (x, y) column
// marching z with the planes below, at and above in registers; ZSPLIT blocks down z
// (blockIdx.z: each marches ceil(nz / ZSPLIT) planes, more blocks in flight on a small
// plane); USE_SMEM = 1 stages each plane's u and k over the block and a one-point halo in
// shared memory (the x / y neighbours from there instead of four L1 reads each).
// Launch: grid = (ceil(nx / BX), ceil(ny / BY), ZSPLIT), block = (BX, BY).
// Defaults: the kernel as written (32 x 4 threads, one block down z, neighbours via L1).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 4
#endif
#ifndef ZSPLIT
#define ZSPLIT 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif

// the flux through one face, in the kernel's order of terms
static __device__ __forceinline__ float face(float kc, float kn, float un, float uc)
{
    return 0.5f * (kc + kn) * (un - uc);
}

extern "C" __global__ void __launch_bounds__(BX * BY)
varcoef7_zmarch(float *__restrict__ out, const float *__restrict__ u,
                const float *__restrict__ k, float dt, int nx, int ny, int nz)
{
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y = blockIdx.y * BY + threadIdx.y;
    const bool live = x < nx && y < ny;
    const bool side = x == 0 || y == 0 || x == nx - 1 || y == ny - 1;
    const size_t plane = (size_t)nx * ny;
    const int zchunk = (nz + ZSPLIT - 1) / ZSPLIT;
    const int z0 = blockIdx.z * zchunk;
    const int z1 = min(z0 + zchunk, nz);
    const size_t col = live ? (size_t)y * nx + x : 0; // (x, y) in a plane

#if USE_SMEM
    __shared__ float su[BY + 2][BX + 2], sk[BY + 2][BX + 2];
    const int tid = threadIdx.y * BX + threadIdx.x;
#endif

    float u_dn = 0.0f, k_dn = 0.0f, u_c = 0.0f, k_c = 0.0f;
    if (live && z0 < z1) {
        if (z0 > 0) {
            u_dn = u[(size_t)(z0 - 1) * plane + col];
            k_dn = k[(size_t)(z0 - 1) * plane + col];
        }
        u_c = u[(size_t)z0 * plane + col];
        k_c = k[(size_t)z0 * plane + col];
    }
    for (int z = z0; z < z1; ++z) {
        float u_up = 0.0f, k_up = 0.0f;
        if (live && z + 1 < nz) {
            u_up = u[(size_t)(z + 1) * plane + col];
            k_up = k[(size_t)(z + 1) * plane + col];
        }
        const size_t c = (size_t)z * plane + col;
#if USE_SMEM
        __syncthreads(); // the last plane's reads are done
        for (int e = tid; e < (BY + 2) * (BX + 2); e += BX * BY) {
            const int r = e / (BX + 2), s = e % (BX + 2);
            const int gx = blockIdx.x * BX + s - 1, gy = blockIdx.y * BY + r - 1;
            float uv = 0.0f, kv = 0.0f;
            if (gx >= 0 && gx < nx && gy >= 0 && gy < ny) {
                const size_t g = (size_t)z * plane + (size_t)gy * nx + gx;
                uv = u[g];
                kv = k[g];
            }
            su[r][s] = uv;
            sk[r][s] = kv;
        }
        __syncthreads();
#endif
        if (live) {
            if (side || z == 0 || z == nz - 1) {
                out[c] = u_c;
            } else {
#if USE_SMEM
                const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
                float flux = face(k_c, sk[ty][tx - 1], su[ty][tx - 1], u_c);
                flux += face(k_c, sk[ty][tx + 1], su[ty][tx + 1], u_c);
                flux += face(k_c, sk[ty - 1][tx], su[ty - 1][tx], u_c);
                flux += face(k_c, sk[ty + 1][tx], su[ty + 1][tx], u_c);
#else
                float flux = face(k_c, k[c - 1], u[c - 1], u_c);
                flux += face(k_c, k[c + 1], u[c + 1], u_c);
                flux += face(k_c, k[c - nx], u[c - nx], u_c);
                flux += face(k_c, k[c + nx], u[c + nx], u_c);
#endif
                flux += face(k_c, k_dn, u_dn, u_c);
                flux += face(k_c, k_up, u_up, u_c);
                out[c] = u_c + dt * flux;
            }
        }
        u_dn = u_c;
        k_dn = k_c;
        u_c = u_up;
        k_c = k_up;
    }
}
