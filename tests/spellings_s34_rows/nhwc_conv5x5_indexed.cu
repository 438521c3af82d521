// Respelling of nhwc_conv5x5_c3to4 (session 34): constexpr sizes, the window counted from
// 0 (`for (int ky = 0; ky < kK; ++ky)`), the pixel read inline with an explicit zero-padding
// test (`if (inside) { r = px[0]; .. }`), the weights indexed flat
// (`wts[((o * kK + ky) * kK + kx) * kCin + c]`), the sums initialised from the bias in one
// loop and stored in another through an index, no pointer locals.

constexpr int kR = 2;
constexpr int kK = 2 * kR + 1;
constexpr int kCin = 3;
constexpr int kCout = 4;

__constant__ float wts[kCout * kK * kK * kCin];
__constant__ float bias[kCout];

struct Rgb {
    float r, g, b;
};

static __device__ Rgb pixel_at(const float *in, int plane, int px, int py, int W, int H)
{
    Rgb v = {0.0f, 0.0f, 0.0f};
    if (px >= 0 && px < W && py >= 0 && py < H) {
        const size_t at = (((size_t)plane * H + py) * W + px) * kCin;
        v.r = in[at];
        v.g = in[at + 1];
        v.b = in[at + 2];
    }
    return v;
}

extern "C" __global__ void nhwc_conv5x5_c3to4(float *out, const float *in, int W, int H)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= W || row >= H)
        return;
    const int plane = blockIdx.z;
    float sum[kCout];
    for (int o = 0; o < kCout; o++)
        sum[o] = bias[o];
    for (int ky = 0; ky < kK; ky++) {
        for (int kx = 0; kx < kK; kx++) {
            const Rgb v = pixel_at(in, plane, col + kx - kR, row + ky - kR, W, H);
            for (int o = 0; o < kCout; o++) {
                const int w0 = ((o * kK + ky) * kK + kx) * kCin;
                sum[o] += wts[w0] * v.r + wts[w0 + 1] * v.g + wts[w0 + 2] * v.b;
            }
        }
    }
    for (int o = 0; o < kCout; o++)
        out[(((size_t)plane * H + row) * W + col) * kCout + o] = sum[o];
}
