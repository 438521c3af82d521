// The flipped multi-channel convolution respelled: constexpr sizes, size_t plane offsets
// through a plane pointer, the taps skipped with `continue`, the weight read through a
// pointer walked per channel, the filter index written as (K - 1 - ...) offsets.
constexpr int kChannels = 4;
constexpr int kTaps = 5;
constexpr int kRadius = kTaps / 2;

__constant__ float weights[kChannels * kTaps * kTaps];

extern "C" __global__ void conv5_channels(float *out, const float *in, int h, int w)
{
    int x = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    int y = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    if (y >= h || x >= w)
        return;
    float sum = 0.f;
    for (int ch = 0; ch < kChannels; ch++) {
        const float *plane = in + (size_t)ch * (size_t)h * (size_t)w;
        const float *filt = weights + ch * kTaps * kTaps;
        for (int ky = 0; ky < kTaps; ky++) {
            int iy = y - ky + kRadius;
            if (iy < 0 || iy >= h) continue;
            for (int kx = 0; kx < kTaps; kx++) {
                int ix = x - kx + kRadius;
                if (ix < 0 || ix >= w) continue;
                sum += filt[ky * kTaps + kx] * plane[(size_t)iy * w + ix];
            }
        }
    }
    out[(size_t)y * w + x] = sum;
}
