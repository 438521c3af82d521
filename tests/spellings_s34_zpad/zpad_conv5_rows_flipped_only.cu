// Respelling of conv5x5_zpad_batch (set 27), mixed directions: the rows flipped as written
// (y + 2 - i) and the columns walked upwards (x - 2 + j) against the mirrored column of
// the filter, c_weights[i][4 - j]: the same convolution, its taps in another order.
static constexpr int kTaps = 5;
__constant__ float c_weights[kTaps][kTaps];

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int width,
                                              int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const float *src = in + blockIdx.z * (size_t)width * height;
    float *dst = out + blockIdx.z * (size_t)width * height;
    if (x < width && y < height) {
        float acc = 0.0f;
        for (int i = 0; i < kTaps; ++i)
            for (int j = 0; j < kTaps; ++j) {
                const int sy = y + 2 - i, sx = x - 2 + j;
                acc = fmaf(c_weights[i][kTaps - 1 - j],
                           (sy >= 0 && sy < height && sx >= 0 && sx < width)
                               ? src[sy * width + sx] : 0.0f, acc);
            }
        dst[y * width + x] = acc;
    }
}
