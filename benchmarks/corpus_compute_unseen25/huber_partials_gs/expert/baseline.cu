// Huber loss (delta 1) of pred - target, reduced to one partial sum a block: each thread
// adds the loss of the elements a grid-stride loop hands it, the block adds its threads'
// sums in a shared-memory tree (a template helper sized by the block) and writes
// partial[blockIdx.x]; the host adds the partials. At most 1024 blocks of 256 threads.
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).

template <int BLOCK>
__device__ float block_sum(float v)
{
    __shared__ float buf[BLOCK];
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            buf[threadIdx.x] += buf[threadIdx.x + half];
        __syncthreads();
    }
    return buf[0];
}

__device__ inline float huber(float d)
{
    float a = fabsf(d);
    return a <= 1.0f ? 0.5f * d * d : a - 0.5f;
}

extern "C" __global__ void huber_partials_gs(float *partial, const float *pred,
                                             const float *target, int n)
{
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        sum += huber(pred[i] - target[i]);
    float total = block_sum<256>(sum);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = total;
}
