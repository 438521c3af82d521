// Per-block partial sums of ((test - ref) / 32768)^2 over two int16 signals (grid-stride);
// the host adds the partials.
// Expert parameterization (hand-written): THREADS a block, at most BLOCKS blocks; VEC
// samples of each signal a load (4: 8 bytes, 8: 16 bytes; the last n % VEC samples by
// the grid's first threads), ITEMS loads in flight a thread a step (a grid width apart,
// each into its own sum); SHFL = 1 reduces the block's sums by warp shuffles and one warp
// over the warps' sums instead of the shared-memory tree.
// Launch: grid = min(ceil(n / THREADS), BLOCKS), block = (THREADS).
// Defaults: the kernel as written (256 threads, 1024 blocks at most, scalar loads, the
// shared-memory tree).

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
#ifndef SHFL
#define SHFL 0
#endif

// VEC samples of a signal, one load
struct __align__(2 * VEC) samples {
    short s[VEC];
};

static __device__ __forceinline__ float squared_error(short t, short r)
{
    const float d = (float)(t - r) * (1.0f / 32768.0f);
    return d * d;
}

extern "C" __global__ void __launch_bounds__(THREADS)
mse_i16_partials(float *__restrict__ partial, const short *__restrict__ ref,
                 const short *__restrict__ test, unsigned n)
{
    const unsigned tid = threadIdx.x;
    const unsigned gtid = blockIdx.x * THREADS + tid;
    const unsigned stride = gridDim.x * THREADS;
    const unsigned groups = n / VEC;
    const samples *__restrict__ rg = reinterpret_cast<const samples *>(ref);
    const samples *__restrict__ tg = reinterpret_cast<const samples *>(test);

    float acc[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        acc[k] = 0.0f;

    for (unsigned g = gtid; g < groups; g += stride * ITEMS) {
        samples r[ITEMS], t[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (g + k * stride < groups) {
                r[k] = rg[g + k * stride];
                t[k] = tg[g + k * stride];
            }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (g + k * stride < groups) {
#pragma unroll
                for (int v = 0; v < VEC; ++v)
                    acc[k] += squared_error(t[k].s[v], r[k].s[v]);
            }
    }
#if VEC > 1
    if (gtid < n - groups * VEC) // the last n % VEC samples
        acc[0] += squared_error(test[groups * VEC + gtid], ref[groups * VEC + gtid]);
#endif
#pragma unroll
    for (int k = 1; k < ITEMS; ++k)
        acc[0] += acc[k];

#if SHFL
    __shared__ float per_warp[THREADS / 32];
    float s = acc[0];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (tid % 32 == 0)
        per_warp[tid / 32] = s;
    __syncthreads();
    if (tid < 32) {
        s = tid < THREADS / 32 ? per_warp[tid] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (tid == 0)
            partial[blockIdx.x] = s;
    }
#else
    __shared__ float cache[THREADS];
    cache[tid] = acc[0];
    __syncthreads();
#pragma unroll
    for (unsigned s = THREADS / 2; s > 0; s >>= 1) {
        if (tid < s)
            cache[tid] += cache[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = cache[0];
#endif
}
