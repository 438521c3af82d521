// Session 35 respelling of the grid-stride partial-sum family (corpus_compute_unseen27/
// mse_i16_partials, corpus_compute_unseen26/minmax_sum_partials): per-block partial sums of
// a signal and of its square (the host forms the mean and the variance). A struct of the
// two partial quantities, a #define block width, an unsigned grid-stride for loop, a
// butterfly of __shfl_xor_sync in a helper, one shared struct a warp and thread 0 folding
// the warps' structs; it writes sum[b] and sumsq[b].
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).

#define THREADS 256
#define WARPS (THREADS / 32)

struct Moments {
    float s, s2;
};

__device__ Moments butterfly(Moments m)
{
    for (int mask = 16; mask >= 1; mask /= 2) {
        m.s += __shfl_xor_sync(0xffffffffu, m.s, mask);
        m.s2 += __shfl_xor_sync(0xffffffffu, m.s2, mask);
    }
    return m;
}

extern "C" __global__ void moment_partials(float *sum, float *sumsq, const float *x, unsigned n)
{
    __shared__ Moments per_warp[WARPS];
    Moments m = {0.0f, 0.0f};
    for (unsigned i = blockIdx.x * THREADS + threadIdx.x; i < n; i += gridDim.x * THREADS) {
        const float v = x[i];
        m.s += v;
        m.s2 += v * v;
    }
    m = butterfly(m);
    if (threadIdx.x % 32 == 0)
        per_warp[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        Moments t = per_warp[0];
        for (int w = 1; w < WARPS; ++w) {
            t.s += per_warp[w].s;
            t.s2 += per_warp[w].s2;
        }
        sum[blockIdx.x] = t.s;
        sumsq[blockIdx.x] = t.s2;
    }
}
