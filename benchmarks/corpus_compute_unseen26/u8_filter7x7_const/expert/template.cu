// 7 x 7 filter of an 8-bit grey image into float, edges replicated, the 49 taps in
// constant memory; out = scale * the sum.
// Expert parameterization (hand-written): BX x BY threads a block; ITEMS_Y vertically
// adjacent output pixels a thread, each of the ITEMS_Y + 6 input rows it needs read once
// (seven pixels into registers) and added into every output it reaches (register
// sliding window); USE_SMEM = 1 stages the block's clamped input window, converted to
// float, in shared memory (one byte load a pixel instead of 49).
// Launch: grid = (ceil(width / BX), ceil(height / (BY * ITEMS_Y))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 threads, one pixel a thread, taps through L1).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif

#define RADIUS 3
#define TAPS (2 * RADIUS + 1)
#define ROWS_IN (ITEMS_Y + 2 * RADIUS) // input rows a thread reads

__constant__ float taps[TAPS * TAPS];

static __device__ __forceinline__ int clamp_to(int v, int hi)
{
    return min(max(v, 0), hi);
}

extern "C" __global__ void __launch_bounds__(BX * BY)
u8_filter7x7_const(float *__restrict__ out, const unsigned char *__restrict__ img, int width,
                   int height, float scale)
{
    const int x = blockIdx.x * BX + threadIdx.x;
    const int y0 = blockIdx.y * (BY * ITEMS_Y) + threadIdx.y * ITEMS_Y; // first output row

#if USE_SMEM
    __shared__ float win[BY * ITEMS_Y + 2 * RADIUS][BX + 2 * RADIUS];
    {
        const int wx = blockIdx.x * BX - RADIUS, wy = blockIdx.y * (BY * ITEMS_Y) - RADIUS;
        for (int e = threadIdx.y * BX + threadIdx.x;
             e < (BY * ITEMS_Y + 2 * RADIUS) * (BX + 2 * RADIUS); e += BX * BY) {
            const int r = e / (BX + 2 * RADIUS), c = e % (BX + 2 * RADIUS);
            win[r][c] = (float)img[(size_t)clamp_to(wy + r, height - 1) * width +
                                   clamp_to(wx + c, width - 1)];
        }
    }
    __syncthreads();
#else
    int xs[TAPS];
#pragma unroll
    for (int dx = 0; dx < TAPS; ++dx)
        xs[dx] = clamp_to(x + dx - RADIUS, width - 1);
#endif

    float acc[ITEMS_Y];
#pragma unroll
    for (int i = 0; i < ITEMS_Y; ++i)
        acc[i] = 0.0f;

#pragma unroll
    for (int r = 0; r < ROWS_IN; ++r) {
        float v[TAPS];
#if USE_SMEM
#pragma unroll
        for (int dx = 0; dx < TAPS; ++dx)
            v[dx] = win[threadIdx.y * ITEMS_Y + r][threadIdx.x + dx];
#else
        const unsigned char *row = img + (size_t)clamp_to(y0 + r - RADIUS, height - 1) * width;
#pragma unroll
        for (int dx = 0; dx < TAPS; ++dx)
            v[dx] = (float)row[xs[dx]];
#endif
        // input row r is tap row r - i of output i
#pragma unroll
        for (int i = 0; i < ITEMS_Y; ++i) {
            if (r - i >= 0 && r - i < TAPS) {
#pragma unroll
                for (int dx = 0; dx < TAPS; ++dx)
                    acc[i] += taps[(r - i) * TAPS + dx] * v[dx];
            }
        }
    }

    if (x < width) {
#pragma unroll
        for (int i = 0; i < ITEMS_Y; ++i)
            if (y0 + i < height)
                out[(size_t)(y0 + i) * width + x] = acc[i] * scale;
    }
}
