/* Pixel shuffle (depth to space, upscale factor 2) of an NCHW float tensor:
 *     out[n][c][2y + i][2x + j] = in[n][4c + 2i + j][y][x]
 * in is N x 4C x H x W, out is N x C x 2H x 2W.
 * Expert parameterization (hand-written): a work unit is JV output columns (2: both j of an
 * input pixel, one float2 store) times XV input pixels along x (contiguous) times IV output
 * rows (2: both i of an input row); PS_THREADS threads a block, PS_ITEMS units a thread
 * strided by PS_THREADS.
 * Launch: grid = ceil(N * C * (2H / IV) * ceil((2W / JV) / XV) / (PS_THREADS * PS_ITEMS)),
 * block = PS_THREADS.
 * Defaults: the kernel as written (one output element a thread, 256 threads).
 */

#ifndef PS_THREADS
#define PS_THREADS 256
#endif
#ifndef PS_ITEMS
#define PS_ITEMS 1
#endif
#ifndef JV
#define JV 1
#endif
#ifndef XV
#define XV 1
#endif
#ifndef IV
#define IV 1
#endif
#define PS_R 2

#if JV == 1 && XV != 1
#error "XV > 1 needs JV == 2"
#endif

#define IN_IDX(n, ch, y, x, C, H, W) \
    (((((size_t)(n) * (C) * PS_R * PS_R + (ch)) * (H) + (y)) * (W) + (x)))
#define OUT_IDX(n, c, oy, ox, C, H, W) \
    (((((size_t)(n) * (C) + (c)) * ((H) * PS_R) + (oy)) * ((W) * PS_R) + (ox)))

extern "C" __global__ void __launch_bounds__(PS_THREADS)
pixel_shuffle_r2(float *__restrict__ out, const float *__restrict__ in, int N, int C, int H,
                 int W)
{
    const int XG = ((W * PS_R) / JV + XV - 1) / XV;   /* x groups a row */
    const int YG = (H * PS_R) / IV;                   /* row groups a plane */
    const int units = N * C * YG * XG;
    const int first = blockIdx.x * (PS_THREADS * PS_ITEMS) + threadIdx.x;

#pragma unroll
    for (int it = 0; it < PS_ITEMS; ++it) {
        const int u = first + it * PS_THREADS;
        if (u >= units)
            break;
        const int xg = u % XG;
        const int yg = (u / XG) % YG;
        const int c = (u / (XG * YG)) % C;
        const int n = u / (XG * YG * C);
#pragma unroll
        for (int ii = 0; ii < IV; ++ii) {
            const int oy = yg * IV + ii;
            const int y = oy / PS_R, i = oy % PS_R;
#if JV == 1
            const int x = xg / PS_R, j = xg % PS_R;
            out[OUT_IDX(n, c, oy, xg, C, H, W)] =
                __ldg(in + IN_IDX(n, c * PS_R * PS_R + i * PS_R + j, y, x, C, H, W));
#else
            const float *p0 = in + IN_IDX(n, c * PS_R * PS_R + i * PS_R, y, 0, C, H, W);
            const float *p1 = p0 + (size_t)H * W;
#pragma unroll
            for (int k = 0; k < XV; ++k) {
                const int x = xg * XV + k;
                if (x < W)
                    *reinterpret_cast<float2 *>(out + OUT_IDX(n, c, oy, PS_R * x, C, H, W)) =
                        make_float2(__ldg(p0 + x), __ldg(p1 + x));
            }
#endif
        }
    }
}
