// depthwise_conv1d_k9 respelled: #define sizes, the taps indexed in constant memory, size_t
// row offsets written out at each access, the line NT + K - 1 long, the outputs' guard an if
// around the work.
#define NT 256
#define K 9

__constant__ float taps[1024 * K];

extern "C" __global__ void depthwise_conv1d_k9(float* __restrict__ y,
                                               const float* __restrict__ x, int C, int T)
{
    __shared__ float line[NT + K - 1];
    int base = blockIdx.x * NT - K / 2;
    for (int s = threadIdx.x; s < NT + K - 1; s += NT) {
        int at = base + s;
        line[s] = (at >= 0 && at < T) ? x[(size_t)blockIdx.y * T + at] : 0.0f;
    }
    __syncthreads();
    int t = blockIdx.x * NT + threadIdx.x;
    if (t < T) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++)
            sum += taps[blockIdx.y * K + k] * line[threadIdx.x + k];
        y[(size_t)blockIdx.y * T + t] = sum;
    }
}
