// 5 x 5 convolution (the filter flipped, as signal processing defines it) of a batch of
// float planes, zero padding: out[p][y][x] = the sum over i, j of w[i][j] *
// in[p][y + 2 - i][x + 2 - j], a tap outside the plane contributing nothing. The filter
// sits in a 2-D __constant__ array; constexpr sizes, each plane found by pointer
// arithmetic (plane p on blockIdx.z), the work inside a bounds guard rather than an early
// return. One output pixel a thread, every tap a load through L1.
// Launch: grid = ((width + 15) / 16, (height + 15) / 16, planes), block = (16, 16).

static constexpr int kTaps = 5;
static constexpr int kHalf = kTaps / 2;

__constant__ float c_weights[kTaps][kTaps];

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int width,
                                              int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const size_t planeSize = (size_t)width * height;
    const float *src = in + blockIdx.z * planeSize;
    float *dst = out + blockIdx.z * planeSize;

    if (x < width && y < height) {
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < kTaps; ++i) {
            const int sy = y + kHalf - i;
#pragma unroll
            for (int j = 0; j < kTaps; ++j) {
                const int sx = x + kHalf - j;
                if (sy >= 0 && sy < height && sx >= 0 && sx < width)
                    acc += c_weights[i][j] * src[sy * width + sx];
            }
        }
        dst[y * width + x] = acc;
    }
}
