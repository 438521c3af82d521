// Session 35 respelling of the grid-stride partial-sum family (corpus_compute_unseen27/
// mse_i16_partials): per-block partial dot products of two float vectors accumulated in
// double (the host adds the partials). A while loop over an int index, a blockDim-derived
// stride, a helper for the term, then the modern final stage: warp sums by
// __shfl_down_sync, one shared slot a warp, the first warp sums the slots; lane 0 of warp 0
// writes the block's sum (rounded to float).
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).

__device__ __forceinline__ double term(float x, float y)
{
    return (double)x * (double)y;
}

__device__ __forceinline__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

extern "C" __global__ void dot_partials(float *partial, const float *x, const float *y, int n)
{
    __shared__ double warp_part[32];
    double acc = 0.0;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n) {
        acc += term(x[i], y[i]);
        i += blockDim.x * gridDim.x;
    }
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    acc = warp_sum(acc);
    if (lane == 0)
        warp_part[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? warp_part[lane] : 0.0;
        acc = warp_sum(acc);
        if (lane == 0)
            partial[blockIdx.x] = (float)acc;
    }
}
