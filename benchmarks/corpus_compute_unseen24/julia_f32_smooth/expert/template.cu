// Julia set of z -> z^2 + c, c = -0.123 + 0.745i, smooth colouring in float: pixel
// (px, py) starts at z = (-1.6 + 3.2 px / width, -1.2 + 2.4 py / height), iterates while
// |z|^2 <= 256 and fewer than 200 steps; an escape after `it` steps gets
// it + 1 - log2(0.5 log |z|^2), an orbit that stays gets 0.
// Expert parameterization (hand-written): BX x BY blocks, ITEMS pixels a thread along x
// (BX apart, so a warp's stores stay coalesced) iterated together in one loop (their
// orbits interleaved: independent multiply-adds in flight; a finished orbit is frozen
// while the others run), the step unrolled UNROLL times between exit tests (a step past
// the bailout is taken only while still inside; the count stays exact), FAST = 1 the
// logarithms as __logf / __log2f.
// Launch: grid = (ceil(width / (BX * ITEMS)), ceil(height / BY)), block = (BX, BY).
// Defaults: the kernel as written (16 x 16, one pixel a thread, no unrolling, logf/log2f).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef FAST
#define FAST 0
#endif

#define MAX_IT 200
#define BAILOUT 256.0f

#if FAST
#define LOGF(v) __logf(v)
#define LOG2F(v) __log2f(v)
#else
#define LOGF(v) logf(v)
#define LOG2F(v) log2f(v)
#endif

extern "C" __global__ void __launch_bounds__(BX * BY)
julia_f32_smooth(float *__restrict__ img, int width, int height)
{
    const float cr = -0.123f, ci = 0.745f;
    const int py = blockIdx.y * BY + threadIdx.y;
    const int px0 = blockIdx.x * BX * ITEMS + threadIdx.x;
    if (py >= height || px0 >= width)
        return;
    const float zi0 = -1.2f + 2.4f * (float)py / (float)height;

    float zr[ITEMS], zi[ITEMS], r2[ITEMS];
    int it[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int px = px0 + k * BX;
        zr[k] = -1.6f + 3.2f * (float)px / (float)width;
        zi[k] = zi0;
        r2[k] = zr[k] * zr[k] + zi[k] * zi[k];
        it[k] = 0;
    }

    bool live = true;
    while (live) {
        live = false;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                if (r2[k] <= BAILOUT && it[k] < MAX_IT) {
                    const float t = zr[k] * zr[k] - zi[k] * zi[k] + cr;
                    zi[k] = 2.0f * zr[k] * zi[k] + ci;
                    zr[k] = t;
                    r2[k] = zr[k] * zr[k] + zi[k] * zi[k];
                    ++it[k];
                }
            }
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            live |= r2[k] <= BAILOUT && it[k] < MAX_IT;
    }

    float *row = img + py * width;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int px = px0 + k * BX;
        if (px < width)
            row[px] = r2[k] <= BAILOUT ? 0.0f
                                       : (float)it[k] + 1.0f - LOG2F(0.5f * LOGF(r2[k]));
    }
}
