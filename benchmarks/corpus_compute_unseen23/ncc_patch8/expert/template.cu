// Normalized cross-correlation of an 8 x 8 template t against every valid 8 x 8 window of an
// image I (H x W, row-major), output (H - 7) x (W - 7):
//   ncc = sum I tc / sqrt((sII - sI^2 / 64) sum tc^2),  tc = t - mean(t).
// Expert parameterization (hand-written): a BX x (BY * RY) output tile a block, staged with
// its 7-pixel apron (rows padded by PAD floats); RY consecutive output rows a thread: each
// of the RY + 7 tile rows the thread touches is read into registers once and added into
// every output whose window holds it (register reuse of the window down y); TSM=1 the
// mean-removed template staged in shared memory once a block instead of read through the
// global pointer at every tap. Each output's sums run over dy then dx, as written.
// Launch: grid = (ceil((W - 7) / BX), ceil((H - 7) / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (32 x 8 blocks, one output a thread, global template).

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef RY
#define RY 1
#endif
#ifndef PAD
#define PAD 0
#endif
#ifndef TSM
#define TSM 0
#endif
#define PATCH 8
#define APRON (PATCH - 1)
#define OUT_ROWS (BY * RY)

extern "C" __global__ void __launch_bounds__(BX * BY)
ncc_patch8(float *__restrict__ out, const float *__restrict__ img, const float *__restrict__ tpl,
           int W, int H)
{
    __shared__ float win[OUT_ROWS + APRON][BX + APRON + PAD];
#if TSM
    __shared__ float tcs[PATCH * PATCH];
#endif

    const int ow = W - APRON, oh = H - APRON;
    const int x0 = blockIdx.x * BX, y0 = blockIdx.y * OUT_ROWS;

    for (int r = threadIdx.y; r < OUT_ROWS + APRON; r += BY) {
        const int gy = y0 + r;
        for (int c = threadIdx.x; c < BX + APRON; c += BX) {
            const int gx = x0 + c;
            win[r][c] = (gy < H && gx < W) ? __ldg(img + (size_t)gy * W + gx) : 0.0f;
        }
    }

#if TSM
    // the template read from global memory once a block; its mean and energy from the
    // staged copy (the same values summed in the same order as from the pointer)
    __shared__ float traw[PATCH * PATCH];
    const int tid = threadIdx.y * BX + threadIdx.x;
    for (int k = tid; k < PATCH * PATCH; k += BX * BY)
        traw[k] = __ldg(tpl + k);
    __syncthreads();
    const float *tsrc = traw;
#else
    const float *tsrc = tpl;
#endif
    float tsum = 0.0f;
    for (int k = 0; k < PATCH * PATCH; ++k)
        tsum += tsrc[k];
    const float tmean = tsum * (1.0f / (PATCH * PATCH));
    float tss = 0.0f;
    for (int k = 0; k < PATCH * PATCH; ++k) {
        const float d = tsrc[k] - tmean;
        tss += d * d;
    }
#if TSM
    for (int k = tid; k < PATCH * PATCH; k += BX * BY)
        tcs[k] = traw[k] - tmean;
#endif
    __syncthreads();

    const int x = x0 + threadIdx.x;
    const int ly = threadIdx.y * RY;  // first output row of this thread in the tile
    if (x >= ow || y0 + ly >= oh)
        return;

    float sI[RY], sII[RY], sIT[RY];
#pragma unroll
    for (int k = 0; k < RY; ++k)
        sI[k] = sII[k] = sIT[k] = 0.0f;

#pragma unroll
    for (int r = 0; r < RY + APRON; ++r) {
        float p[PATCH];
#pragma unroll
        for (int dx = 0; dx < PATCH; ++dx)
            p[dx] = win[ly + r][threadIdx.x + dx];
#pragma unroll
        for (int k = 0; k < RY; ++k) {
            const int dy = r - k;
            if (dy < 0 || dy >= PATCH)
                continue;
#pragma unroll
            for (int dx = 0; dx < PATCH; ++dx) {
#if TSM
                const float t = tcs[dy * PATCH + dx];
#else
                const float t = __ldg(tpl + dy * PATCH + dx) - tmean;
#endif
                sI[k] += p[dx];
                sII[k] += p[dx] * p[dx];
                sIT[k] += p[dx] * t;
            }
        }
    }

#pragma unroll
    for (int k = 0; k < RY; ++k) {
        const int y = y0 + ly + k;
        if (y < oh) {
            const float var = sII[k] - sI[k] * sI[k] * (1.0f / (PATCH * PATCH));
            out[(size_t)y * ow + x] = sIT[k] / sqrtf(var * tss);
        }
    }
}
