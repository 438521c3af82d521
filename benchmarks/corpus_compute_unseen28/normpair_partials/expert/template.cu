// Per-block partials of the L1 norm (accumulated in double) and the max norm of a float
// vector: block b writes its sum of |x| to partials[b] and its largest |x| to
// partials[1024 + b], both as float.
// Expert parameterization (hand-written): THREADS a block over at most BLOCKS blocks (the
// grid still at most one block a 4 THREADS elements), VEC = 2 or 4 reads float2 or float4
// groups (the n % VEC elements past the last group taken by block 0's first threads), ITEMS loads in flight a grid-stride step
// (independent accumulator pairs, combined after the loop), SHFL = 1 combines each warp by
// __shfl_down_sync and only the warps' results through shared memory (SHFL = 0: the shared
// tree of structs as written). Blocks deal elements differently from the kernel as
// written: reference.py verify() checks the partials' total and maximum.
// Launch: grid = (min(ceil(n / (4 THREADS)), BLOCKS)), block = (THREADS).
// Defaults: the kernel as written (256 threads, at most 1024 blocks, one load a step).

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

#define MAX_PARTS 1024

struct NormPair {
    double l1;  // accumulated in double: millions of terms
    float amax; // a max of exact values: float suffices
};

__device__ __forceinline__ NormPair combine(NormPair p, NormPair q)
{
    NormPair r;
    r.l1 = p.l1 + q.l1;
    r.amax = fmaxf(p.amax, q.amax);
    return r;
}

__device__ __forceinline__ void take(NormPair &p, float v)
{
    const float a = fabsf(v);
    p.l1 += a;
    p.amax = fmaxf(p.amax, a);
}

#if VEC == 4
typedef float4 VecT;
__device__ __forceinline__ void take_group(NormPair &p, float4 v)
{
    take(p, v.x);
    take(p, v.y);
    take(p, v.z);
    take(p, v.w);
}
#elif VEC == 2
typedef float2 VecT;
__device__ __forceinline__ void take_group(NormPair &p, float2 v)
{
    take(p, v.x);
    take(p, v.y);
}
#else
typedef float VecT;
__device__ __forceinline__ void take_group(NormPair &p, float v) { take(p, v); }
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
normpair_partials(float *__restrict__ partials, const float *__restrict__ x, long long n)
{
    NormPair acc[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        acc[k] = NormPair{0.0, 0.0f};

    const long long step = (long long)gridDim.x * THREADS;
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    const long long count = n / VEC; // whole groups of VEC
    for (; i + (ITEMS - 1) * step < count; i += ITEMS * step) {
        VecT v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            v[k] = reinterpret_cast<const VecT *>(x)[i + k * step];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            take_group(acc[k], v[k]);
    }
    for (; i < count; i += step)
        take_group(acc[0], reinterpret_cast<const VecT *>(x)[i]);
#if VEC > 1
    // the n % VEC elements past the last whole group: block 0's first threads
    if (blockIdx.x == 0 && threadIdx.x < n - count * VEC)
        take(acc[0], x[count * VEC + threadIdx.x]);
#endif
    NormPair mine = acc[0];
#pragma unroll
    for (int k = 1; k < ITEMS; ++k)
        mine = combine(mine, acc[k]);

#if SHFL
    __shared__ NormPair warps[THREADS / 32];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        NormPair other;
        other.l1 = __shfl_down_sync(0xffffffffu, mine.l1, off);
        other.amax = __shfl_down_sync(0xffffffffu, mine.amax, off);
        mine = combine(mine, other);
    }
    if ((threadIdx.x & 31) == 0)
        warps[threadIdx.x >> 5] = mine;
    __syncthreads();
    if (threadIdx.x < 32) {
        mine = threadIdx.x < THREADS / 32 ? warps[threadIdx.x] : NormPair{0.0, 0.0f};
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            NormPair other;
            other.l1 = __shfl_down_sync(0xffffffffu, mine.l1, off);
            other.amax = __shfl_down_sync(0xffffffffu, mine.amax, off);
            mine = combine(mine, other);
        }
        if (threadIdx.x == 0) {
            partials[blockIdx.x] = (float)mine.l1;
            partials[MAX_PARTS + blockIdx.x] = mine.amax;
        }
    }
#else
    __shared__ NormPair part[THREADS];
    part[threadIdx.x] = mine;
    __syncthreads();
    unsigned live = THREADS;
    while (live > 1) {
        live >>= 1;
        if (threadIdx.x < live)
            part[threadIdx.x] = combine(part[threadIdx.x], part[threadIdx.x + live]);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = (float)part[0].l1;
        partials[MAX_PARTS + blockIdx.x] = part[0].amax;
    }
#endif
}
