// Per-block partial sums of the squared error between two 16-bit PCM signals scaled to
// [-1, 1) (a codec's mean-square-error check; the host adds the partials and divides by
// n): partial[b] = the sum over the elements block b's threads visit of
// ((test[i] - ref[i]) / 32768)^2. A grid-stride loop over unsigned indices, then the
// classic shared-memory tree with a barrier a level; thread 0 writes the block's sum.
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).

#define BLOCK_SIZE 256

extern "C" __global__ void mse_i16_partials(float *partial, const short *ref, const short *test,
                                            unsigned n)
{
    __shared__ float cache[BLOCK_SIZE];
    const unsigned tid = threadIdx.x;
    const unsigned stride = gridDim.x * blockDim.x;

    float acc = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + tid; i < n; i += stride) {
        const float d = (float)(test[i] - ref[i]) * (1.0f / 32768.0f);
        acc += d * d;
    }
    cache[tid] = acc;
    __syncthreads();

    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            cache[tid] += cache[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = cache[0];
}
