// box27_aniso_dacc's family with the same AT macro, size_t arithmetic and 32 x 4 x 2 block:
// an anisotropic 7-point star smoother (the centre weighted 1 - 2(ax + ay + az), each
// axis' two neighbours by its a), the sum in double in the written order, the boundary copied.

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
            double acc = (1.0 - 2.0 * ((double)ax + (double)ay + (double)az)) * in[AT(z, y, x)];
            acc += (double)ax * in[AT(z, y, x - 1)];
            acc += (double)ax * in[AT(z, y, x + 1)];
            acc += (double)ay * in[AT(z, y - 1, x)];
            acc += (double)ay * in[AT(z, y + 1, x)];
            acc += (double)az * in[AT(z - 1, y, x)];
            acc += (double)az * in[AT(z + 1, y, x)];
            out[AT(z, y, x)] = (float)acc;
        }
    }
}
