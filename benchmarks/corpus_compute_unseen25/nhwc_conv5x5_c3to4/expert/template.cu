// 5 x 5 convolution (cross-correlation, zero padding, same size) of NHWC RGB float images
// in [n][H][W][3] to four channels out [n][H][W][4], weights and biases in constant memory.
// Expert parameterization (hand-written): BX x BY threads, each ITEMS_Y vertically adjacent
// output pixels (the 4 + ITEMS_Y input rows it needs read once, each feeding up to five of
// its outputs from registers); the block's input window (its BY * ITEMS_Y + 4 rows of
// BX + 4 pixels, zeros outside the image) staged in shared memory (USE_SMEM = 1; lanes
// read pixels 3 floats apart: no bank conflicts) or read through L1 (0); the four channels
// stored as one float4 (STORE4 = 1) or one at a time. An output's terms are added in the
// order the kernel as written adds them.
// Launch: grid = (ceil(W / BX), ceil(H / (BY * ITEMS_Y)), n), block = (BX, BY).
// Defaults: the kernel as written (16 x 16 threads, one pixel a thread, global reads).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef ITEMS_Y
#define ITEMS_Y 1
#endif
#ifndef USE_SMEM
#define USE_SMEM 0
#endif
#ifndef STORE4
#define STORE4 0
#endif

#define KR 2
#define KS (2 * KR + 1)
#define CIN 3
#define COUT 4

__constant__ float wts[COUT][KS][KS][CIN];
__constant__ float bias[COUT];

constexpr int kRows = BY * ITEMS_Y;      // output rows a block
constexpr int kWinH = kRows + 2 * KR;    // window rows
constexpr int kWinW = BX + 2 * KR;       // window pixels a row

struct Rgb {
    float r, g, b;
};

static __device__ __forceinline__ Rgb fetch(const float *__restrict__ img, int x, int y,
                                            int W, int H)
{
    Rgb p = {0.0f, 0.0f, 0.0f};
    if (x >= 0 && y >= 0 && x < W && y < H) {
        const float *q = img + ((size_t)y * W + x) * CIN;
        p.r = q[0];
        p.g = q[1];
        p.b = q[2];
    }
    return p;
}

extern "C" __global__ void __launch_bounds__(BX * BY)
nhwc_conv5x5_c3to4(float *__restrict__ out, const float *__restrict__ in, int W, int H)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = blockIdx.x * BX, y0 = blockIdx.y * kRows;
    const int x = x0 + tx, ybase = y0 + ty * ITEMS_Y;
    const float *img = in + (size_t)blockIdx.z * H * W * CIN;

#if USE_SMEM
    __shared__ float win[kWinH][kWinW * CIN];
    for (int q = ty * BX + tx; q < kWinH * kWinW; q += BX * BY) {
        const int r = q / kWinW, c = q % kWinW;
        const Rgb p = fetch(img, x0 + c - KR, y0 + r - KR, W, H);
        win[r][c * CIN] = p.r;
        win[r][c * CIN + 1] = p.g;
        win[r][c * CIN + 2] = p.b;
    }
    __syncthreads();
#endif
    if (x >= W || ybase >= H)
        return;

    float acc[ITEMS_Y][COUT];
#pragma unroll
    for (int i = 0; i < ITEMS_Y; ++i)
#pragma unroll
        for (int o = 0; o < COUT; ++o)
            acc[i][o] = bias[o];

    // input row r of this thread's window feeds output i at tap row dy = r - i
#pragma unroll
    for (int r = 0; r < ITEMS_Y + 2 * KR; ++r) {
#pragma unroll
        for (int dx = 0; dx < KS; ++dx) {
#if USE_SMEM
            const float *s = &win[ty * ITEMS_Y + r][(tx + dx) * CIN];
            const Rgb p = {s[0], s[1], s[2]};
#else
            const Rgb p = fetch(img, x + dx - KR, ybase + r - KR, W, H);
#endif
#pragma unroll
            for (int i = 0; i < ITEMS_Y; ++i) {
                const int dy = r - i;
                if (dy >= 0 && dy < KS) {
#pragma unroll
                    for (int o = 0; o < COUT; ++o) {
                        const float *w = wts[o][dy][dx];
                        acc[i][o] += w[0] * p.r + w[1] * p.g + w[2] * p.b;
                    }
                }
            }
        }
    }

#pragma unroll
    for (int i = 0; i < ITEMS_Y; ++i) {
        const int y = ybase + i;
        if (y < H) {
            float *dst = out + (((size_t)blockIdx.z * H + y) * W + x) * COUT;
#if STORE4
            *reinterpret_cast<float4 *>(dst) = make_float4(acc[i][0], acc[i][1], acc[i][2],
                                                           acc[i][3]);
#else
#pragma unroll
            for (int o = 0; o < COUT; ++o)
                dst[o] = acc[i][o];
#endif
        }
    }
}
