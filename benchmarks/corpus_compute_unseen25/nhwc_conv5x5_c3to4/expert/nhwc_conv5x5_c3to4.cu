// 5 x 5 convolution (a cross-correlation, zero padding, same size) of a batch of
// interleaved RGB float images (NHWC: in [n][H][W][3]) to four output channels
// (out [n][H][W][4]), the weights and biases in constant memory. One output pixel a
// thread; a helper fetches a pixel as a struct of three floats (zeros outside the image).
// Launch: grid = ((W + 15) / 16, (H + 15) / 16, n), block = (16, 16).

#define KR 2     // filter radius: 5 x 5 taps
#define CIN 3
#define COUT 4

__constant__ float wts[COUT][2 * KR + 1][2 * KR + 1][CIN];
__constant__ float bias[COUT];

struct Rgb {
    float r, g, b;
};

__device__ Rgb fetch(const float *img, int x, int y, int W, int H)
{
    Rgb p = {0.0f, 0.0f, 0.0f};
    if (x < 0 || y < 0 || x >= W || y >= H)
        return p;
    const float *q = img + ((size_t)y * W + x) * CIN;
    p.r = q[0];
    p.g = q[1];
    p.b = q[2];
    return p;
}

extern "C" __global__ void nhwc_conv5x5_c3to4(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H)
        return;
    const float *img = in + (size_t)blockIdx.z * H * W * CIN;

    float acc[COUT];
    for (int o = 0; o < COUT; ++o)
        acc[o] = bias[o];
    for (int dy = -KR; dy <= KR; ++dy) {
        for (int dx = -KR; dx <= KR; ++dx) {
            Rgb p = fetch(img, x + dx, y + dy, W, H);
            for (int o = 0; o < COUT; ++o) {
                const float *w = wts[o][dy + KR][dx + KR];
                acc[o] += w[0] * p.r + w[1] * p.g + w[2] * p.b;
            }
        }
    }
    float *dst = out + (((size_t)blockIdx.z * H + y) * W + x) * COUT;
    for (int o = 0; o < COUT; ++o)
        dst[o] = acc[o];
}
