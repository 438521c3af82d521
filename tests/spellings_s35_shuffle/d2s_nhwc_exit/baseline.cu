// Session 35 respelling of corpus_compute_unseen22/pixel_shuffle_r2 in the other layout:
// depth-to-space by 2 of an NHWC tensor (as TensorFlow's DCR depth_to_space),
//     out[n][2y + i][2x + j][c] = in[n][y][x][(2i + j) * C + c],
// in is N x H x W x 4C, out is N x 2H x 2W x C. A constexpr factor and block, an early
// return, the coordinates from a helper, the channel the fastest index.
// Launch: grid = ((N * 4 * H * W * C + 255) / 256), block = (256).
constexpr int kBlock = 256;
constexpr int kFactor = 2;

__device__ inline int src_offset(int n, int oy, int ox, int c, int C, int H, int W)
{
    const int sub = (oy % kFactor) * kFactor + ox % kFactor;
    return ((n * H + oy / kFactor) * W + ox / kFactor) * (C * kFactor * kFactor) + sub * C + c;
}

extern "C" __global__ void d2s_nhwc_exit(float *out, const float *in, int N, int C, int H,
                                         int W)
{
    int idx = blockIdx.x * kBlock + threadIdx.x;
    int total = N * (H * kFactor) * (W * kFactor) * C;
    if (idx >= total)
        return;
    int c = idx % C;
    int ox = (idx / C) % (W * kFactor);
    int oy = (idx / (C * W * kFactor)) % (H * kFactor);
    int n = idx / (C * W * kFactor * H * kFactor);
    out[idx] = in[src_offset(n, oy, ox, c, C, H, W)];
}
