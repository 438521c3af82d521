/*
 * Transposed 2-D convolution, stride 2, 4 x 4 taps, padding 1 (2x upsampling):
 *   out[k][oy][ox] = sum_c sum_{ky,kx} in[c][iy][ix] * w[c][k][ky][kx]
 * over the taps with oy = 2 iy - 1 + ky, ox = 2 ix - 1 + kx inside the input (two rows
 * and two columns of taps a pixel, picked by its parity). in: C x H x W, w: C x K x 4 x 4,
 * out: K x 2H x 2W, all row-major. One output pixel a thread, 16 x 16 a block, one output
 * channel a grid layer.
 * Launch: grid = ((2W + 15) / 16, (2H + 15) / 16, K), block = (16, 16).
 */

#define TAPS 4

extern "C" __global__ void upconv4x4_s2(float *out, const float *in, const float *w, int C,
                                        int K, int H, int W)
{
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z;
    int OH = 2 * H, OW = 2 * W;
    const float *ip, *wp;
    float acc = 0.0f;
    int c, ky, kx, iy, ix;

    if (ox >= OW || oy >= OH)
        return;
    c = 0;
    while (c < C) {
        ip = in + (long)c * H * W;
        wp = w + ((long)c * K + k) * TAPS * TAPS;
        ky = (oy + 1) & 1;
        while (ky < TAPS) {
            iy = (oy + 1 - ky) >> 1;
            if (iy >= 0 && iy < H) {
                kx = (ox + 1) & 1;
                while (kx < TAPS) {
                    ix = (ox + 1 - kx) >> 1;
                    if (ix >= 0 && ix < W)
                        acc += ip[iy * W + ix] * wp[ky * TAPS + kx];
                    kx += 2;
                }
            }
            ky += 2;
        }
        c++;
    }
    out[((long)k * OH + oy) * OW + ox] = acc;
}
