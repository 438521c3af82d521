// Huber loss (delta 1) of pred - target reduced to one partial sum a block of a grid-stride
// walk; the host adds the partials.
// Expert parameterization (hand-written): THREADS a block, at most BLOCKS blocks (the
// grid-stride loop takes the rest); VEC = 4 reads pred and target as float4 (the last
// n % 4 elements by the first block's first threads); ITEMS loads of each input in flight a
// thread a stride (a block width apart, each into its own sum); the block's sum by a
// shared-memory tree (FINAL = 0, as written) or warp shuffles and one shared stage (1).
// Launch: grid = min(ceil(n / (THREADS * VEC * ITEMS)), BLOCKS), block = (THREADS).
// Defaults: the kernel as written (256 threads, 1024 blocks at most, scalar loads, tree).

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
#ifndef FINAL
#define FINAL 0
#endif

static __device__ __forceinline__ float huber(float d)
{
    const float a = fabsf(d);
    return a <= 1.0f ? 0.5f * d * d : a - 0.5f;
}

static __device__ __forceinline__ float block_sum(float v)
{
#if FINAL
    __shared__ float warps[THREADS / 32];
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x % 32 == 0)
        warps[threadIdx.x / 32] = v;
    __syncthreads();
    v = 0.0f;
    if (threadIdx.x < 32) {
        v = threadIdx.x < THREADS / 32 ? warps[threadIdx.x] : 0.0f;
#pragma unroll
        for (int off = 16; off > 0; off /= 2)
            v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
#else
    __shared__ float buf[THREADS];
    buf[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            buf[threadIdx.x] += buf[threadIdx.x + half];
        __syncthreads();
    }
    return buf[0];
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS)
huber_partials_gs(float *__restrict__ partial, const float *__restrict__ pred,
                  const float *__restrict__ target, int n)
{
    float sum[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        sum[k] = 0.0f;
    const int stride = gridDim.x * THREADS * ITEMS;
#if VEC == 4
    const int groups = n / 4;
    const float4 *p4 = reinterpret_cast<const float4 *>(pred);
    const float4 *t4 = reinterpret_cast<const float4 *>(target);
    for (int g = blockIdx.x * THREADS * ITEMS + threadIdx.x; g < groups; g += stride) {
        float4 p[ITEMS], t[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int j = g + k * THREADS;
            if (j < groups) {
                p[k] = p4[j];
                t[k] = t4[j];
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (g + k * THREADS < groups)
                sum[k] += huber(p[k].x - t[k].x) + huber(p[k].y - t[k].y) +
                          huber(p[k].z - t[k].z) + huber(p[k].w - t[k].w);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n - groups * 4) {
        const int i = groups * 4 + threadIdx.x;
        sum[0] += huber(pred[i] - target[i]);
    }
#else
    for (int i = blockIdx.x * THREADS * ITEMS + threadIdx.x; i < n; i += stride) {
        float p[ITEMS], t[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const int j = i + k * THREADS;
            if (j < n) {
                p[k] = pred[j];
                t[k] = target[j];
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (i + k * THREADS < n)
                sum[k] += huber(p[k] - t[k]);
    }
#endif
#pragma unroll
    for (int k = 1; k < ITEMS; ++k)
        sum[0] += sum[k];
    const float total = block_sum(sum[0]);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = total;
}
