// 5 x 5 cross-correlation at dilation 2 of a stack of float images, valid output
// ((H - 8) x (W - 8)), the taps in a flat 1-D __constant__ array.
// Expert parameterization (hand-written): BX x BY threads a block, each an ITEMS_Y x
// ITEMS_X patch of adjacent outputs: every one of its ITEMS_Y + 8 input rows read once
// (ITEMS_X + 8 pixels into registers) and added into every output whose dilated footprint
// it crosses (input row rr feeds output row a through tap row (rr - a) / 2 where that is
// even and within the filter), taps in the order the kernel as written sums them;
// USE_SMEM = 1 stages the block's input window (its 8-pixel apron right and below) in
// shared memory first.
// Launch: grid = (ceil((W - 8) / (BX ITEMS_X)), ceil((H - 8) / (BY ITEMS_Y)), images),
//         block = (BX, BY).
// Defaults: the kernel as written (32 x 8 threads, one pixel a thread, taps through L1).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ITEMS_X
#define ITEMS_X 1
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif

#define KW 5
#define DIL 2
#define SPAN ((KW - 1) * DIL)        // the footprint's extent past its first pixel: 8
#define COLS_IN (ITEMS_X + SPAN)     // input pixels a thread reads a row
#define ROWS_IN (ITEMS_Y + SPAN)     // input rows a thread reads
#define WIN_W (BX * ITEMS_X + SPAN)
#define WIN_H (BY * ITEMS_Y + SPAN)

__constant__ float taps[KW * KW];

extern "C" __global__ void __launch_bounds__(BX * BY)
dil2_conv5_valid(float *__restrict__ out, const float *__restrict__ in, int W, int H)
{
    const int outW = W - SPAN, outH = H - SPAN;
    const float *__restrict__ src = in + (size_t)blockIdx.z * H * W;
    float *__restrict__ dst = out + (size_t)blockIdx.z * outH * outW;
    const int bx0 = blockIdx.x * (BX * ITEMS_X), by0 = blockIdx.y * (BY * ITEMS_Y);
    const int x0 = bx0 + threadIdx.x * ITEMS_X; // the thread's first output column
    const int y0 = by0 + threadIdx.y * ITEMS_Y; // and row

#if USE_SMEM
    __shared__ float win[WIN_H][WIN_W];
    for (int e = threadIdx.y * BX + threadIdx.x; e < WIN_H * WIN_W; e += BX * BY) {
        const int r = e / WIN_W, c = e % WIN_W;
        const int sy = by0 + r, sx = bx0 + c;
        win[r][c] = (sy < H && sx < W) ? src[(size_t)sy * W + sx] : 0.0f;
    }
    __syncthreads();
#endif

    float acc[ITEMS_Y][ITEMS_X];
#pragma unroll
    for (int a = 0; a < ITEMS_Y; ++a)
#pragma unroll
        for (int b = 0; b < ITEMS_X; ++b)
            acc[a][b] = 0.0f;

#pragma unroll
    for (int rr = 0; rr < ROWS_IN; ++rr) {
        float v[COLS_IN];
#if USE_SMEM
#pragma unroll
        for (int c = 0; c < COLS_IN; ++c)
            v[c] = win[threadIdx.y * ITEMS_Y + rr][threadIdx.x * ITEMS_X + c];
#else
        const int sy = y0 + rr;
#pragma unroll
        for (int c = 0; c < COLS_IN; ++c) {
            const int sx = x0 + c;
            v[c] = (sy < H && sx < W) ? src[(size_t)sy * W + sx] : 0.0f;
        }
#endif
#pragma unroll
        for (int a = 0; a < ITEMS_Y; ++a) {
            const int d = rr - a; // DIL * the tap row, where even and within the filter
            if (d >= 0 && d <= SPAN && d % DIL == 0) {
                const int r = d / DIL;
#pragma unroll
                for (int b = 0; b < ITEMS_X; ++b)
#pragma unroll
                    for (int c = 0; c < KW; ++c)
                        acc[a][b] += taps[r * KW + c] * v[b + c * DIL];
            }
        }
    }

#pragma unroll
    for (int a = 0; a < ITEMS_Y; ++a)
#pragma unroll
        for (int b = 0; b < ITEMS_X; ++b)
            if (y0 + a < outH && x0 + b < outW)
                dst[(size_t)(y0 + a) * outW + x0 + b] = acc[a][b];
}
