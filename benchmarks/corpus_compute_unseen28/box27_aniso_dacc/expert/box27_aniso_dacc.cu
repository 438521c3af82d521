// One smoothing sweep of a 3-D float field with an anisotropic 27-point box stencil, the
// weights a tensor product of three 1-D three-point kernels [a, 1 - 2a, a] with a
// different a along each axis (ax, ay, az: a grid spaced unevenly): at an interior point
// out = sum over dz, dy, dx in {-1, 0, 1} of wz[dz] wy[dy] wx[dx] in[z + dz][y + dy][x + dx];
// a point on the boundary is copied. The weights and the sum in double, the result rounded
// to float once. Layout [nz][ny][nx], x fastest, indexed through a
// macro with size_t arithmetic; a 3-D launch, one point a thread, the boundary test and
// the 27 taps in one guarded block.
// Launch: grid = ((nx + 31) / 32, (ny + 3) / 4, (nz + 1) / 2), block = (32, 4, 2).

#define AT(z, y, x) (((size_t)(z) * ny + (size_t)(y)) * nx + (size_t)(x))

extern "C" __global__ void box27_aniso_dacc(float *out, const float *in, int nx, int ny,
                                            int nz, float ax, float ay, float az)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int z = blockIdx.z * blockDim.z + threadIdx.z;

    if (x < nx && y < ny && z < nz) {
        if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
            out[AT(z, y, x)] = in[AT(z, y, x)];
        } else {
            const double wx[3] = {ax, 1.0 - 2.0 * ax, ax};
            const double wy[3] = {ay, 1.0 - 2.0 * ay, ay};
            const double wz[3] = {az, 1.0 - 2.0 * az, az};
            double acc = 0.0;
            for (int k = 0; k < 3; ++k)
                for (int j = 0; j < 3; ++j)
                    for (int i = 0; i < 3; ++i)
                        acc += wz[k] * wy[j] * wx[i] * in[AT(z + k - 1, y + j - 1, x + i - 1)];
            out[AT(z, y, x)] = (float)acc;
        }
    }
}
