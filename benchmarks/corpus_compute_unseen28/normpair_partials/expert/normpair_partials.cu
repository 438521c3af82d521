// Per-block partials of two norms of a float vector at once, the L1 norm (the sum of |x|,
// accumulated in double) and the max norm (the largest |x|), as a convergence monitor
// computes them: block b writes its share of each to partials[b] (sum, rounded to float)
// and partials[1024 + b] (max); the host adds the sums and takes the max of the maxima. The pair travels as a struct with a combine
// helper; a grid-stride loop over 64-bit indices, then a shared-memory tree of structs
// whose while loop halves the live threads each level.
// Launch: grid = (min((n + 1023) / 1024, 1024)), block = (256).

#define NORM_THREADS 256
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

extern "C" __global__ void normpair_partials(float *partials, const float *x, long long n)
{
    __shared__ NormPair part[NORM_THREADS];

    NormPair mine = {0.0, 0.0f};
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    while (i < n) {
        const float a = fabsf(x[i]);
        mine.l1 += a;
        mine.amax = fmaxf(mine.amax, a);
        i += step;
    }
    part[threadIdx.x] = mine;
    __syncthreads();

    unsigned live = blockDim.x;
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
}
