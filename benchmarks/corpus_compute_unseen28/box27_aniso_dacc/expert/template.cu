// One sweep of the anisotropic 27-point box smoother over a float field [nz][ny][nx]
// (weights [a, 1 - 2a, a] along each axis, multiplied, in double; the sum in double),
// boundary points copied.
// Expert parameterization (hand-written): BX x BY x BZ threads a block, each ZITEMS
// consecutive z planes of one (x, y) column; REUSE = 1 uses the weights' separability
// along z: a column's in-plane 9-point sums (weights wy wx) kept in registers as it
// marches, each plane's summed once and weighted by az, 1 - 2 az, az for the three
// outputs it reaches (9 loads a point instead of 27; sums in another order: ~1e-16 apart
// in double, at most an ulp apart once rounded to float); REUSE = 0 sums the 27 taps as written.
// Launch: grid = (ceil(nx / BX), ceil(ny / BY), ceil(nz / (BZ ZITEMS))),
//         block = (BX, BY, BZ).
// Defaults: the kernel as written (32 x 4 x 2 threads, one point a thread, 27 taps).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 4
#endif
#ifndef BZ
#define BZ 2
#endif
#ifndef ZITEMS
#define ZITEMS 1
#endif
#ifndef REUSE
#define REUSE 0
#endif

#define AT(z, y, x) (((size_t)(z) * ny + (size_t)(y)) * nx + (size_t)(x))

extern "C" __global__ void __launch_bounds__(BX * BY * BZ)
box27_aniso_dacc(float *__restrict__ out, const float *__restrict__ in, int nx, int ny,
                 int nz, float ax, float ay, float az)
{
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y = blockIdx.y * BY + threadIdx.y;
    const int z0 = (blockIdx.z * BZ + threadIdx.z) * ZITEMS;
    if (x >= nx || y >= ny || z0 >= nz)
        return;

    const double wx[3] = {ax, 1.0 - 2.0 * ax, ax};
    const double wy[3] = {ay, 1.0 - 2.0 * ay, ay};
    const double wz[3] = {az, 1.0 - 2.0 * az, az};
    const bool edge = x == 0 || y == 0 || x == nx - 1 || y == ny - 1;

#if REUSE
    if (edge) {
#pragma unroll
        for (int s = 0; s < ZITEMS; ++s) {
            const int z = z0 + s;
            if (z < nz)
                out[AT(z, y, x)] = in[AT(z, y, x)];
        }
        return;
    }
    double w2[9]; // wy[j] wx[i]
#pragma unroll
    for (int j = 0; j < 3; ++j)
#pragma unroll
        for (int i = 0; i < 3; ++i)
            w2[j * 3 + i] = wy[j] * wx[i];
    // the in-plane sum of plane zz around (x, y)
    auto plane = [&](int zz) {
        double p = 0.0;
#pragma unroll
        for (int j = 0; j < 3; ++j)
#pragma unroll
            for (int i = 0; i < 3; ++i)
                p += w2[j * 3 + i] * in[AT(zz, y + j - 1, x + i - 1)];
        return p;
    };
    double pm = z0 > 0 ? plane(z0 - 1) : 0.0; // planes z - 1 and z
    double pc = plane(z0);
#pragma unroll
    for (int s = 0; s < ZITEMS; ++s) {
        const int z = z0 + s;
        if (z >= nz)
            break;
        const double pp = z + 1 < nz ? plane(z + 1) : 0.0;
        if (z == 0 || z == nz - 1)
            out[AT(z, y, x)] = in[AT(z, y, x)];
        else
            out[AT(z, y, x)] = (float)(wz[0] * pm + wz[1] * pc + wz[2] * pp);
        pm = pc;
        pc = pp;
    }
#else
#pragma unroll
    for (int s = 0; s < ZITEMS; ++s) {
        const int z = z0 + s;
        if (z >= nz)
            break;
        if (edge || z == 0 || z == nz - 1) {
            out[AT(z, y, x)] = in[AT(z, y, x)];
        } else {
            double acc = 0.0;
            for (int k = 0; k < 3; ++k)
                for (int j = 0; j < 3; ++j)
                    for (int i = 0; i < 3; ++i)
                        acc += wz[k] * wy[j] * wx[i] * in[AT(z + k - 1, y + j - 1, x + i - 1)];
            out[AT(z, y, x)] = (float)acc;
        }
    }
#endif
}
