// Range statistics of a float array in per-block partials (the calibration pass before an
// int8 quantisation): block b takes the contiguous chunk [b * chunk, min((b + 1) * chunk, n))
// with chunk = ceil(n / gridDim.x), its threads walk the chunk a block width apart in a
// while loop, and it writes the chunk's minimum, maximum and sum to lo[b], hi[b] and
// sum[b]; the host folds the partials. A struct of the three merged by warp shuffles, then
// one warp over the warps' results. At most 1024 blocks of 256.
// Launch: grid = (min((n + 2047) / 2048, 1024)), block = (256).

struct Range {
    float lo, hi, sum;
};

__device__ Range merge(Range a, Range b)
{
    Range m = {fminf(a.lo, b.lo), fmaxf(a.hi, b.hi), a.sum + b.sum};
    return m;
}

__device__ Range warp_merge(Range r)
{
    for (int d = 16; d > 0; d >>= 1) {
        Range o;
        o.lo = __shfl_down_sync(0xffffffffu, r.lo, d);
        o.hi = __shfl_down_sync(0xffffffffu, r.hi, d);
        o.sum = __shfl_down_sync(0xffffffffu, r.sum, d);
        r = merge(r, o);
    }
    return r;
}

extern "C" __global__ void minmax_sum_partials(float *lo, float *hi, float *sum, const float *x,
                                               long long n)
{
    const long long chunk = (n + gridDim.x - 1) / gridDim.x;
    const long long begin = (long long)blockIdx.x * chunk;
    const long long end = begin + chunk < n ? begin + chunk : n;

    Range r = {INFINITY, -INFINITY, 0.0f};
    long long i = begin + threadIdx.x;
    while (i < end) {
        const float v = x[i];
        r.lo = fminf(r.lo, v);
        r.hi = fmaxf(r.hi, v);
        r.sum += v;
        i += blockDim.x;
    }

    __shared__ Range per_warp[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    r = warp_merge(r);
    if (lane == 0)
        per_warp[warp] = r;
    __syncthreads();
    if (warp == 0) {
        const Range none = {INFINITY, -INFINITY, 0.0f};
        r = lane < (int)(blockDim.x / 32) ? per_warp[lane] : none;
        r = warp_merge(r);
        if (lane == 0) {
            lo[blockIdx.x] = r.lo;
            hi[blockIdx.x] = r.hi;
            sum[blockIdx.x] = r.sum;
        }
    }
}
