// 5 x 5 convolution of NHWC RGB images to four channels, another hand's spelling: constexpr
// sizes, the fetch written inline with a ternary for the zero padding, int index math with
// the batch plane as an element offset, the guard as an `if` around the body, the four
// channels stored through out[] at a flat index.
// Launch: grid = ((W + 15) / 16, (H + 15) / 16, n), block = (16, 16).

constexpr int R = 2;
constexpr int KW = 2 * R + 1;
constexpr int CI = 3;
constexpr int CO = 4;

__constant__ float wts[CO][KW][KW][CI];
__constant__ float bias[CO];

extern "C" __global__ void nhwc_conv5x5_c3to4(float *out, const float *in, int W, int H)
{
    const int x = threadIdx.x + blockIdx.x * blockDim.x;
    const int y = threadIdx.y + blockIdx.y * blockDim.y;
    if (x < W && y < H) {
        const int plane = blockIdx.z * H * W;
        float acc[CO];
        for (int o = 0; o < CO; o++)
            acc[o] = bias[o];
        for (int ky = 0; ky < KW; ky++) {
            const int yy = y + ky - R;
            for (int kx = 0; kx < KW; kx++) {
                const int xx = x + kx - R;
                const bool inside = xx >= 0 && xx < W && yy >= 0 && yy < H;
                const int at = (plane + yy * W + xx) * CI;
                const float r = inside ? in[at] : 0.0f;
                const float g = inside ? in[at + 1] : 0.0f;
                const float b = inside ? in[at + 2] : 0.0f;
                for (int o = 0; o < CO; o++)
                    acc[o] += wts[o][ky][kx][0] * r + wts[o][ky][kx][1] * g +
                              wts[o][ky][kx][2] * b;
            }
        }
        for (int o = 0; o < CO; o++)
            out[(plane + y * W + x) * CO + o] = acc[o];
    }
}
