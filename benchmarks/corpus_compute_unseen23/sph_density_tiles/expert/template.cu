// SPH density summation, all pairs (self included), 3-D cubic-spline kernel of support 2h:
//   rho_i = sum_j m_j W(|r_i - r_j|, h),  q = r / h,  sigma = 1 / (pi h^3),
//   W = sigma (1 - 1.5 q^2 + 0.75 q^3) for q < 1,  sigma 0.25 (2 - q)^3 for q < 2,  else 0.
// pos_mass holds one float4 (x, y, z, m) a particle.
// Expert parameterization (hand-written): THREADS a block, ITEMS particles a thread
// (strided by THREADS: each staged neighbour is read once from shared memory for ITEMS
// sums), TILE particles staged a step (loaded by a strided loop), UNROLL the neighbour
// loop's unroll, CUT=1 the square root only for pairs inside the support (d^2 < 4 h^2).
// sigma is applied once a particle and q = r * (1 / h): a rounding or two of the density.
// Launch: grid = ceil(n / (THREADS * ITEMS)), block = THREADS.
// Defaults: the kernel as written (256 threads, one particle a thread, 256-particle tiles).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef TILE
#define TILE 256
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef CUT
#define CUT 0
#endif

constexpr int kUnroll = UNROLL;

// W / sigma at q = r / h
static __device__ __forceinline__ float spline_shape(float q)
{
    if (q < 1.0f)
        return 1.0f - 1.5f * q * q + 0.75f * q * q * q;
    if (q < 2.0f) {
        const float t = 2.0f - q;
        return 0.25f * t * t * t;
    }
    return 0.0f;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sph_density_tiles(float *__restrict__ rho, const float *__restrict__ pos_mass, int n, float h)
{
    __shared__ float4 tile[TILE];
    const float4 *__restrict__ particles = reinterpret_cast<const float4 *>(pos_mass);
    const float inv_h = 1.0f / h;
#if CUT
    const float support2 = 4.0f * h * h;
#endif
    const int first = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;

    float mx[ITEMS], my[ITEMS], mz[ITEMS], density[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = first + k * THREADS;
        const float4 me = i < n ? __ldg(particles + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        mx[k] = me.x;
        my[k] = me.y;
        mz[k] = me.z;
        density[k] = 0.0f;
    }

    for (int start = 0; start < n; start += TILE) {
        for (int t = threadIdx.x; t < TILE; t += THREADS) {
            const int j = start + t;
            tile[t] = j < n ? __ldg(particles + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        __syncthreads();
        const int count = min(TILE, n - start);
#pragma unroll kUnroll
        for (int s = 0; s < count; ++s) {
            const float4 other = tile[s];
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const float dx = mx[k] - other.x;
                const float dy = my[k] - other.y;
                const float dz = mz[k] - other.z;
                const float d2 = dx * dx + dy * dy + dz * dz;
#if CUT
                if (d2 < support2)
                    density[k] += other.w * spline_shape(sqrtf(d2) * inv_h);
#else
                density[k] += other.w * spline_shape(sqrtf(d2) * inv_h);
#endif
            }
        }
        __syncthreads();
    }

    const float sigma = 1.0f / (3.14159265358979f * h * h * h);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = first + k * THREADS;
        if (i < n)
            rho[i] = sigma * density[k];
    }
}
