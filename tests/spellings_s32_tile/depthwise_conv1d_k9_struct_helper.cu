// depthwise_conv1d_k9 respelled: sizes as a struct's static members, the zero-padded read
// a helper, unsigned positions, the line's length a named constant of its own.
struct Dw {
    static constexpr int kThreads = 256;
    static constexpr int kTaps = 9;
    static constexpr int kLine = kThreads + kTaps - 1;
};

__constant__ float taps[1024 * Dw::kTaps];

__device__ __forceinline__ float padded(const float* row, int t, int T)
{
    return (t >= 0 && t < T) ? row[t] : 0.0f;
}

extern "C" __global__ void depthwise_conv1d_k9(float* __restrict__ y,
                                               const float* __restrict__ x, int C, int T)
{
    __shared__ float buf[Dw::kLine];
    const unsigned ch = blockIdx.y;
    const int first = (int)(blockIdx.x * Dw::kThreads) - Dw::kTaps / 2;
    const float* src = x + (size_t)ch * T;
    for (int s = threadIdx.x; s < Dw::kLine; s += Dw::kThreads)
        buf[s] = padded(src, first + s, T);
    __syncthreads();
    const int t = (int)(blockIdx.x * Dw::kThreads + threadIdx.x);
    if (t >= T) return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < Dw::kTaps; ++k)
        acc = fmaf(taps[ch * Dw::kTaps + k], buf[threadIdx.x + k], acc);
    y[(size_t)ch * T + t] = acc;
}
