// Depthwise 1-D convolution along time, 9 taps: x and y are [C, T] float (channel-major),
// each channel c with its own filter taps[c * 9 + k] (k = 0..8, centred: zero padding of 4
// at both ends of the signal) from __constant__ memory (room for 1024 channels):
//   y[c][t] = sum_{k=0}^{8} taps[c * 9 + k] * x[c][t + k - 4]   (x outside [0, T) is 0).
// blockIdx.y is the channel; a block of 256 threads owns 256 consecutive outputs, stages
// their inputs plus a 4-sample halo on each side in shared memory, one output a thread.
// Launch: grid = ((T + 255) / 256, C), block = (256).

namespace {
constexpr int kTaps = 9;
constexpr int kHalo = kTaps / 2;
constexpr int kBlock = 256;
constexpr int kMaxChannels = 1024;
}

__constant__ float taps[kMaxChannels * kTaps];

extern "C" __global__ void depthwise_conv1d_k9(float* __restrict__ y,
                                               const float* __restrict__ x, int C, int T)
{
    __shared__ float win[kBlock + 2 * kHalo];
    const int c = blockIdx.y;
    const int t0 = blockIdx.x * kBlock;
    const float* xc = x + (size_t)c * T;

    for (int s = threadIdx.x; s < kBlock + 2 * kHalo; s += kBlock) {
        const int t = t0 + s - kHalo;
        win[s] = (t >= 0 && t < T) ? xc[t] : 0.0f;
    }
    __syncthreads();

    const int t = t0 + threadIdx.x;
    if (t >= T || c >= C) return;
    const float* w = taps + c * kTaps;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kTaps; ++k)
        acc += w[k] * win[threadIdx.x + k];
    y[(size_t)c * T + t] = acc;
}
