// box27_aniso_dacc respelled: the flat index through a __device__ helper in long long,
// the taps read through a pointer to the centre moved by plane / row strides, the weights
// built by a helper; the sum in double in the written order (dz, dy, dx).

__device__ __forceinline__ long long flat3(int z, int y, int x, int ny, int nx)
{
    return ((long long)z * ny + y) * nx + x;
}

__device__ __forceinline__ double tap_weight(float a, int d)
{
    return d == 1 ? 1.0 - 2.0 * a : (double)a;
}

extern "C" __global__ void box27_aniso_dacc(float *out, const float *in, int nx, int ny,
                                            int nz, float ax, float ay, float az)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz)
        return;
    const long long c = flat3(z, y, x, ny, nx);
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        out[c] = in[c];
        return;
    }
    const long long plane = (long long)nx * ny;
    const float *p = in + c - plane - nx - 1;
    double acc = 0.0;
    for (int dz = 0; dz < 3; ++dz) {
        for (int dy = 0; dy < 3; ++dy) {
            for (int dx = 0; dx < 3; ++dx)
                acc += tap_weight(az, dz) * tap_weight(ay, dy) * tap_weight(ax, dx) *
                       p[dz * plane + dy * nx + dx];
        }
    }
    out[c] = (float)acc;
}
