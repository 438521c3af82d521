// Huber loss (delta 1) of pred - target, one partial sum a block (respelling: a while-loop
// grid stride over size_t, the block's tree written in the kernel over a #define'd array).
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).
#define THREADS 256

__device__ __forceinline__ float huber_term(float d)
{
    const float a = fabsf(d);
    if (a <= 1.0f)
        return 0.5f * d * d;
    return a - 0.5f;
}

extern "C" __global__ void huber_partials_gs(float *partial, const float *pred,
                                             const float *target, int n)
{
    __shared__ float cache[THREADS];
    float acc = 0.0f;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    while (idx < (size_t)n) {
        acc += huber_term(pred[idx] - target[idx]);
        idx += (size_t)gridDim.x * blockDim.x;
    }
    cache[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            cache[threadIdx.x] = cache[threadIdx.x] + cache[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = cache[0];
}
