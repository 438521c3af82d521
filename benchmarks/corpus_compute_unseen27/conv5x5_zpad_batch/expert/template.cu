// 5 x 5 convolution (filter flipped) of a batch of float planes, zero padding, the weights
// in a 2-D __constant__ array.
// Expert parameterization (hand-written): BX x BY threads a block, each an ITEMS_Y x
// ITEMS_X patch of adjacent outputs: every one of its ITEMS_Y + 4 input rows read once
// (ITEMS_X + 4 pixels into registers) and added into every output it reaches, taps in the
// order the kernel as written sums them (register sliding windows); USE_SMEM = 1 stages
// the block's input window with its zero halo in shared memory first.
// Launch: grid = (ceil(width / (BX ITEMS_X)), ceil(height / (BY ITEMS_Y)), planes),
//         block = (BX, BY).
// Defaults: the kernel as written (16 x 16 threads, one pixel a thread, taps through L1).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
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

#define KT 5                   // taps a side
#define KH 2                   // the halo
#define COLS_IN (ITEMS_X + 4) // input pixels a thread reads a row
#define ROWS_IN (ITEMS_Y + 4) // input rows a thread reads
#define WIN_W (BX * ITEMS_X + 4)
#define WIN_H (BY * ITEMS_Y + 4)

__constant__ float c_weights[KT][KT];

extern "C" __global__ void __launch_bounds__(BX * BY)
conv5x5_zpad_batch(float *__restrict__ out, const float *__restrict__ in, int width,
                   int height)
{
    const size_t plane = (size_t)width * height;
    const float *__restrict__ src = in + blockIdx.z * plane;
    float *__restrict__ dst = out + blockIdx.z * plane;
    const int bx0 = blockIdx.x * (BX * ITEMS_X), by0 = blockIdx.y * (BY * ITEMS_Y);
    const int x0 = bx0 + threadIdx.x * ITEMS_X; // the thread's first output column
    const int y0 = by0 + threadIdx.y * ITEMS_Y; // and row

#if USE_SMEM
    __shared__ float win[WIN_H][WIN_W];
    for (int e = threadIdx.y * BX + threadIdx.x; e < WIN_H * WIN_W; e += BX * BY) {
        const int r = e / WIN_W, c = e % WIN_W;
        const int sy = by0 - KH + r, sx = bx0 - KH + c;
        win[r][c] = (sy >= 0 && sy < height && sx >= 0 && sx < width)
                        ? src[(size_t)sy * width + sx] : 0.0f;
    }
    __syncthreads();
#endif

    float acc[ITEMS_Y][ITEMS_X];
#pragma unroll
    for (int a = 0; a < ITEMS_Y; ++a)
#pragma unroll
        for (int b = 0; b < ITEMS_X; ++b)
            acc[a][b] = 0.0f;

    // input row r is weight row i = a + 4 - r of output row a: walked from the bottom so
    // each output takes its weight rows (and columns) in ascending order, as written
#pragma unroll
    for (int r = ROWS_IN - 1; r >= 0; --r) {
        float v[COLS_IN];
#if USE_SMEM
#pragma unroll
        for (int c = 0; c < COLS_IN; ++c)
            v[c] = win[threadIdx.y * ITEMS_Y + r][threadIdx.x * ITEMS_X + c];
#else
        const int sy = y0 - KH + r;
        const bool row_in = sy >= 0 && sy < height;
#pragma unroll
        for (int c = 0; c < COLS_IN; ++c) {
            const int sx = x0 - KH + c;
            v[c] = (row_in && sx >= 0 && sx < width) ? src[(size_t)sy * width + sx] : 0.0f;
        }
#endif
#pragma unroll
        for (int a = 0; a < ITEMS_Y; ++a) {
            const int i = a + 4 - r;
            if (i >= 0 && i < KT) {
#pragma unroll
                for (int b = 0; b < ITEMS_X; ++b)
#pragma unroll
                    for (int j = 0; j < KT; ++j)
                        acc[a][b] += c_weights[i][j] * v[b + 4 - j];
            }
        }
    }

#pragma unroll
    for (int a = 0; a < ITEMS_Y; ++a)
#pragma unroll
        for (int b = 0; b < ITEMS_X; ++b)
            if (y0 + a < height && x0 + b < width)
                dst[(size_t)(y0 + a) * width + x0 + b] = acc[a][b];
}
