// A 3 x 3 cross-correlation at dilation 2, zero padded ("same" around each output: taps at
// -2, 0, +2), over the folder's launch ((H - 8) x (W - 8) outputs): the padding written as
// `continue` skips in both loops, sizes as macros, the plane as an int offset.
#define R 1
#define DL 2

__constant__ float taps[25];

extern "C" __global__ void dil2_conv5_valid(float *out, const float *in, int W, int H)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int ow = W - 8, oh = H - 8;
    if (x >= ow || y >= oh) return;
    int plane = blockIdx.z * H * W;
    float acc = 0.0f;
    for (int i = -R; i <= R; ++i) {
        int sy = y + DL * i;
        if (sy < 0 || sy >= H) continue;
        for (int j = -R; j <= R; ++j) {
            int sx = x + DL * j;
            if (sx < 0 || sx >= W) continue;
            acc += taps[(i + R) * 5 + (j + R)] * in[plane + sy * W + sx];
        }
    }
    out[blockIdx.z * oh * ow + y * ow + x] = acc;
}
