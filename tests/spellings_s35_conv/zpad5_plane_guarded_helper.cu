// The late plane offset respelled: the work inside an `if` rather than after an early
// return, the plane's offset a 64-bit local declared inside it, the padded read through a
// helper taking the offset, fmaf accumulation.
constexpr int kTaps = 5;
constexpr int kHalf = kTaps / 2;

__constant__ float c_weights[kTaps][kTaps];

__device__ __forceinline__ float padded(const float *img, long long base, int r, int c,
                                        int rows, int cols)
{
    return (r < 0 || r >= rows || c < 0 || c >= cols) ? 0.0f : img[base + (long long)r * cols + c];
}

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int width,
                                              int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        const long long base = (long long)blockIdx.z * width * height;
        float acc = 0.0f;
        for (int dy = -kHalf; dy <= kHalf; ++dy)
            for (int dx = -kHalf; dx <= kHalf; ++dx)
                acc = fmaf(c_weights[dy + kHalf][dx + kHalf],
                           padded(in, base, y + dy, x + dx, height, width), acc);
        out[base + (long long)y * width + x] = acc;
    }
}
