// SPH density summation, all pairs (self included), 3-D cubic-spline kernel of support 2h:
//   rho_i = sum_j m_j W(|r_i - r_j|, h),  q = r / h,  sigma = 1 / (pi h^3),
//   W = sigma (1 - 1.5 q^2 + 0.75 q^3) for q < 1,  sigma 0.25 (2 - q)^3 for q < 2,  else 0.
// pos_mass holds one float4 (x, y, z, m) a particle. Each block walks over the particles a
// tile of SPH_TILE at a time (a while loop), staging the tile's float4s in shared memory;
// each thread sums its own particle's density over the tile.
// Launch: grid = ((n + 255) / 256), block = (256).

#define SPH_TILE 256
#define SPH_PI 3.14159265358979f

__device__ float cubic_spline(float r, float h)
{
    const float q = r / h;
    const float sigma = 1.0f / (SPH_PI * h * h * h);
    if (q < 1.0f)
        return sigma * (1.0f - 1.5f * q * q + 0.75f * q * q * q);
    else if (q < 2.0f) {
        const float t = 2.0f - q;
        return sigma * 0.25f * t * t * t;
    }
    return 0.0f;
}

extern "C" __global__ void sph_density_tiles(float *rho, const float *pos_mass, int n, float h)
{
    __shared__ float4 tile[SPH_TILE];
    const float4 *particles = reinterpret_cast<const float4 *>(pos_mass);

    int i = blockIdx.x * SPH_TILE + threadIdx.x;
    float4 me = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < n)
        me = particles[i];

    float density = 0.0f;
    int start = 0;
    while (start < n) {
        int j = start + threadIdx.x;
        // particles past n are staged with zero mass
        tile[threadIdx.x] = j < n ? particles[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();

        int count = n - start < SPH_TILE ? n - start : SPH_TILE;
        for (int k = 0; k < count; k++) {
            float4 other = tile[k];
            float dx = me.x - other.x;
            float dy = me.y - other.y;
            float dz = me.z - other.z;
            float r = sqrtf(dx * dx + dy * dy + dz * dz);
            density += other.w * cubic_spline(r, h);
        }
        __syncthreads();
        start += SPH_TILE;
    }

    if (i < n)
        rho[i] = density;
}
