// Per-block minimum, maximum and sum of a float array's contiguous chunks; the host folds
// the partials.
// Expert parameterization (hand-written): THREADS a block, at most BLOCKS blocks (the
// chunks grow to cover n); VEC = 4 reads the chunk as float4 (chunks rounded up to whole
// groups so each starts 16-byte aligned; the array's last n % 4 elements by the last
// chunk's first threads); ITEMS loads in flight a thread a step (a block width apart, each
// into its own minimum, maximum and sum, merged before the block's shuffles).
// Launch: grid = min(ceil(n / (THREADS * 8)), BLOCKS), block = (THREADS).
// Defaults: the kernel as written (256 threads, 1024 blocks at most, scalar loads).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef BLOCKS
#define BLOCKS 1024
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS
#define ITEMS 1
#endif

struct Range {
    float lo, hi, sum;
};

static __device__ __forceinline__ void take(Range &r, float v)
{
    r.lo = fminf(r.lo, v);
    r.hi = fmaxf(r.hi, v);
    r.sum += v;
}

static __device__ __forceinline__ void merge_into(Range &r, const Range &o)
{
    r.lo = fminf(r.lo, o.lo);
    r.hi = fmaxf(r.hi, o.hi);
    r.sum += o.sum;
}

static __device__ __forceinline__ void warp_merge(Range &r)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        Range o;
        o.lo = __shfl_down_sync(0xffffffffu, r.lo, d);
        o.hi = __shfl_down_sync(0xffffffffu, r.hi, d);
        o.sum = __shfl_down_sync(0xffffffffu, r.sum, d);
        merge_into(r, o);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
minmax_sum_partials(float *__restrict__ lo, float *__restrict__ hi, float *__restrict__ sum,
                    const float *__restrict__ x, long long n)
{
    long long chunk = (n + gridDim.x - 1) / gridDim.x;
#if VEC == 4
    chunk = (chunk + 3) & ~3LL; // whole float4 groups: every chunk starts 16-byte aligned
#endif
    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = begin + chunk < n ? begin + chunk : n;

    Range r[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        r[k].lo = INFINITY;
        r[k].hi = -INFINITY;
        r[k].sum = 0.0f;
    }

#if VEC == 4
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const long long g1 = end / 4; // whole groups end here; begin / 4 is whole
    for (long long g = begin / 4 + threadIdx.x; g < g1; g += THREADS * ITEMS) {
        float4 v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (g + k * THREADS < g1)
                v[k] = x4[g + k * THREADS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (g + k * THREADS < g1) {
                take(r[k], v[k].x);
                take(r[k], v[k].y);
                take(r[k], v[k].z);
                take(r[k], v[k].w);
            }
    }
    // the array's last n % 4 elements (only the last chunk ends off a group)
    const long long tail = g1 * 4 > begin ? g1 * 4 : begin;
    if (tail + threadIdx.x < end)
        take(r[0], x[tail + threadIdx.x]);
#else
    for (long long i = begin + threadIdx.x; i < end; i += THREADS * ITEMS) {
        float v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (i + k * THREADS < end)
                v[k] = x[i + k * THREADS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (i + k * THREADS < end)
                take(r[k], v[k]);
    }
#endif
#pragma unroll
    for (int k = 1; k < ITEMS; ++k)
        merge_into(r[0], r[k]);

    __shared__ Range per_warp[THREADS / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    warp_merge(r[0]);
    if (lane == 0)
        per_warp[warp] = r[0];
    __syncthreads();
    if (warp == 0) {
        Range b;
        b.lo = INFINITY;
        b.hi = -INFINITY;
        b.sum = 0.0f;
        if (lane < THREADS / 32)
            b = per_warp[lane];
        warp_merge(b);
        if (lane == 0) {
            lo[blockIdx.x] = b.lo;
            hi[blockIdx.x] = b.hi;
            sum[blockIdx.x] = b.sum;
        }
    }
}
