/* Pixel shuffle (depth to space, as torch.nn.PixelShuffle with upscale factor 2) of an NCHW
 * float tensor:
 *     out[n][c][2y + i][2x + j] = in[n][4c + 2i + j][y][x]
 * in is N x 4C x H x W, out is N x C x 2H x 2W. One output element per thread (the writes
 * coalesced, each warp's reads gathered from two input planes), PS_THREADS threads a block.
 * Launch: grid = ((N * C * 4 * H * W + 255) / 256), block = (256).
 */

#define PS_R 2
#ifndef PS_THREADS
#define PS_THREADS 256
#endif

#define OUT_W(w) ((w) * PS_R)
#define OUT_H(h) ((h) * PS_R)
#define IN_IDX(n, ch, y, x, C, H, W) \
    ((((n) * (C) * PS_R * PS_R + (ch)) * (H) + (y)) * (W) + (x))

extern "C" __global__ void pixel_shuffle_r2(float *out, const float *in, int N, int C, int H,
                                            int W)
{
    int idx = blockIdx.x * PS_THREADS + threadIdx.x;
    int total = N * C * OUT_H(H) * OUT_W(W);
    if (idx >= total)
        return;

    int ox = idx % OUT_W(W);
    int oy = (idx / OUT_W(W)) % OUT_H(H);
    int c = (idx / (OUT_W(W) * OUT_H(H))) % C;
    int n = idx / (OUT_W(W) * OUT_H(H) * C);

    int ch = c * PS_R * PS_R + (oy % PS_R) * PS_R + ox % PS_R;
    out[idx] = in[IN_IDX(n, ch, oy / PS_R, ox / PS_R, C, H, W)];
}
