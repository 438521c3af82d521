// Huber loss (delta 1) of pred - target, one partial sum a block (respelling: the block's
// sum by warp shuffles written by hand in the kernel, one shared slot a warp, warp 0 over
// the slots; the Huber term a branchy helper).
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).
__device__ __forceinline__ float huber(float d)
{
    const float a = fabsf(d);
    if (a > 1.0f)
        return a - 0.5f;
    return 0.5f * d * d;
}

extern "C" __global__ void huber_partials_gs(float *partial, const float *pred,
                                             const float *target, int n)
{
    __shared__ float per_warp[32];
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        s += huber(pred[i] - target[i]);
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, off);
    if (threadIdx.x % 32 == 0)
        per_warp[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? per_warp[threadIdx.x] : 0.0f;
        for (int off = 16; off > 0; off >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, off);
        if (threadIdx.x == 0)
            partial[blockIdx.x] = s;
    }
}
