/*
 * Transposed 2-D convolution, stride 2, 4 x 4 taps, padding 1 (2x upsampling):
 *   out[k][oy][ox] = sum_c sum_{ky,kx} in[c][iy][ix] * w[c][k][ky][kx],
 * oy = 2 iy - 1 + ky, ox = 2 ix - 1 + kx. in: C x H x W, w: C x K x 4 x 4, out: K x 2H x 2W.
 * Expert parameterization (hand-written): BX x BY threads a block, one output pixel each,
 * KO output channels a thread (grid layer z: channels z KO .. z KO + KO - 1, each input
 * value loaded once for all of them; the weights of a channel c read from the read-only
 * cache), the channel loop unrolled by UNROLL.
 * Launch: grid = (ceil(2W / BX), ceil(2H / BY), ceil(K / KO)), block = (BX, BY).
 * Defaults: the kernel as written (16 x 16 blocks, one channel a thread).
 */

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef KO
#define KO 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

extern "C" __global__ void __launch_bounds__(BX * BY)
upconv4x4_s2(float *__restrict__ out, const float *__restrict__ in,
             const float *__restrict__ w, int C, int K, int H, int W)
{
    const int ox = blockIdx.x * BX + threadIdx.x;
    const int oy = blockIdx.y * BY + threadIdx.y;
    const int k0 = blockIdx.z * KO;
    const int OH = 2 * H, OW = 2 * W;
    if (ox >= OW || oy >= OH)
        return;
    // the pixel's two tap rows and columns (by parity) and whether each lands inside
    const int ky0 = (oy + 1) & 1, kx0 = (ox + 1) & 1;
    const int iy0 = (oy + 1 - ky0) >> 1, iy1 = iy0 - 1;
    const int ix0 = (ox + 1 - kx0) >> 1, ix1 = ix0 - 1;
    const bool ry0 = iy0 < H, ry1 = iy1 >= 0, rx0 = ix0 < W, rx1 = ix1 >= 0;
    float acc[KO];
#pragma unroll
    for (int q = 0; q < KO; ++q)
        acc[q] = 0.0f;
    constexpr int kUnroll = UNROLL;
#pragma unroll kUnroll
    for (int c = 0; c < C; ++c) {
        const float *ip = in + (size_t)c * H * W;
        const float v00 = ry0 && rx0 ? __ldg(ip + iy0 * W + ix0) : 0.0f;
        const float v01 = ry0 && rx1 ? __ldg(ip + iy0 * W + ix1) : 0.0f;
        const float v10 = ry1 && rx0 ? __ldg(ip + iy1 * W + ix0) : 0.0f;
        const float v11 = ry1 && rx1 ? __ldg(ip + iy1 * W + ix1) : 0.0f;
#pragma unroll
        for (int q = 0; q < KO; ++q) {
            const int k = k0 + q < K ? k0 + q : K - 1;
            const float *wp = w + ((size_t)c * K + k) * 16;
            // the as-written order: rows ky0 then ky0 + 2, in each kx0 then kx0 + 2
            float a = acc[q];
            if (ry0) {
                if (rx0) a += v00 * __ldg(wp + ky0 * 4 + kx0);
                if (rx1) a += v01 * __ldg(wp + ky0 * 4 + kx0 + 2);
            }
            if (ry1) {
                if (rx0) a += v10 * __ldg(wp + (ky0 + 2) * 4 + kx0);
                if (rx1) a += v11 * __ldg(wp + (ky0 + 2) * 4 + kx0 + 2);
            }
            acc[q] = a;
        }
    }
#pragma unroll
    for (int q = 0; q < KO; ++q)
        if (k0 + q < K)
            out[((size_t)(k0 + q) * OH + oy) * OW + ox] = acc[q];
}
