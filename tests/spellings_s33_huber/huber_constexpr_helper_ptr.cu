// Huber loss (delta 1) of pred - target, one partial sum a block (respelling: a constexpr
// block size, an unsigned grid stride, the block's tree in a helper taking the shared
// buffer's size as a template argument and the result handed back by value).
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).
constexpr int kBlock = 256;

template <unsigned int N>
__device__ float tree_sum(float mine)
{
    __shared__ float lanes[N];
    lanes[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned int step = N >> 1; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            lanes[threadIdx.x] += lanes[threadIdx.x + step];
        __syncthreads();
    }
    return lanes[0];
}

__device__ float huber_of(float p, float t)
{
    const float d = p - t;
    const float a = fabsf(d);
    return a <= 1.0f ? 0.5f * d * d : a - 0.5f;
}

extern "C" __global__ void huber_partials_gs(float *partial, const float *pred,
                                             const float *target, int n)
{
    const unsigned int stride = gridDim.x * blockDim.x;
    float running = 0.0f;
    for (unsigned int k = blockIdx.x * blockDim.x + threadIdx.x; k < (unsigned int)n; k += stride)
        running += huber_of(pred[k], target[k]);
    const float block_total = tree_sum<kBlock>(running);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = block_total;
}
