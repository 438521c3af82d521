// 5 x 5 convolution of NHWC RGB images to four channels, another hand's spelling: the weights
// one flat __constant__ array, the taps one loop of 25 (row and column by / and %), a pixel
// read as a float3 by a helper with the zero padding in it, size_t plane offsets, two
// guards, the output through a pointer to the pixel's four channels.
// Launch: grid = ((W + 15) / 16, (H + 15) / 16, n), block = (16, 16).

#define RADIUS 2
#define TAPS (2 * RADIUS + 1)
#define NIN 3
#define NOUT 4

__constant__ float wts[NOUT * TAPS * TAPS * NIN];
__constant__ float bias[NOUT];

static __device__ __forceinline__ float3 load_px(const float *img, int W, int H, int px, int py)
{
    if (px >= 0 && px < W && py >= 0 && py < H) {
        const float *s = img + (size_t)(py * W + px) * NIN;
        return make_float3(s[0], s[1], s[2]);
    }
    return make_float3(0.0f, 0.0f, 0.0f);
}

extern "C" __global__ void nhwc_conv5x5_c3to4(float *__restrict__ out,
                                              const float *__restrict__ in, int W, int H)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W) return;
    if (y >= H) return;
    const size_t plane = (size_t)blockIdx.z * W * H;

    float acc[NOUT];
    for (int c = 0; c < NOUT; ++c)
        acc[c] = bias[c];
    for (int t = 0; t < TAPS * TAPS; ++t) {
        const int dy = t / TAPS - RADIUS;
        const int dx = t % TAPS - RADIUS;
        const float3 v = load_px(in + plane * NIN, W, H, x + dx, y + dy);
        for (int c = 0; c < NOUT; ++c) {
            const float *w = &wts[(c * TAPS * TAPS + t) * NIN];
            acc[c] += w[0] * v.x + w[1] * v.y + w[2] * v.z;
        }
    }
    float *o = out + (plane + (size_t)y * W + x) * NOUT;
    for (int c = 0; c < NOUT; ++c)
        o[c] = acc[c];
}
