// SSIM map of two grey images a and b (h x w, row-major, whole-number pixels as floats)
// over 7 x 7 uniform windows, edges replicated; C1 = (0.01 * 255)^2, C2 = (0.03 * 255)^2.
// The window sums of a, b, a^2, b^2 and ab are exact in float for 0..255 pixels, so their
// order is free.
// Expert parameterization (hand-written): a BX x (BY * RY) block tile staged with its
// three-pixel apron (rows padded by PAD floats), RY output rows a thread (strided by BY),
// and SEP=1 the window sums separated: horizontal 7-sums of the five quantities for every
// tile row into shared memory, then vertical 7-sums (14 adds a quantity instead of 49).
// Launch: grid = (ceil(w / BX), ceil(h / (BY * RY))), block = (BX, BY).
// Defaults: the kernel as written (16 x 16 blocks, one pixel a thread, 49-tap sums).

#ifndef BX
#define BX 16
#endif
#ifndef BY
#define BY 16
#endif
#ifndef RY
#define RY 1
#endif
#ifndef SEP
#define SEP 0
#endif
#ifndef PAD
#define PAD 0
#endif
#define RADIUS 3
#define WIN (2 * RADIUS + 1)
#define TY (BY * RY)
#define TILE_W (BX + 2 * RADIUS)
#define TILE_H (TY + 2 * RADIUS)

static __device__ __forceinline__ float ssim_of(float sa, float sb, float saa, float sbb,
                                                float sab)
{
    const float inv = 1.0f / 49.0f;
    const float C1 = 6.5025f, C2 = 58.5225f;
    const float ma = sa * inv, mb = sb * inv;
    const float va = saa * inv - ma * ma;
    const float vb = sbb * inv - mb * mb;
    const float cab = sab * inv - ma * mb;
    return ((2.0f * ma * mb + C1) * (2.0f * cab + C2)) /
           ((ma * ma + mb * mb + C1) * (va + vb + C2));
}

extern "C" __global__ void __launch_bounds__(BX * BY)
ssim7_tile(float *__restrict__ ssim, const float *__restrict__ a, const float *__restrict__ b,
           int w, int h)
{
    __shared__ float ta[TILE_H][TILE_W + PAD];
    __shared__ float tb[TILE_H][TILE_W + PAD];

    const int x = blockIdx.x * BX + threadIdx.x;
    const int y0 = blockIdx.y * TY + threadIdx.y;

    for (int ty = threadIdx.y; ty < TILE_H; ty += BY) {
        const int gy = min(max((int)blockIdx.y * TY + ty - RADIUS, 0), h - 1);
        for (int tx = threadIdx.x; tx < TILE_W; tx += BX) {
            const int gx = min(max((int)blockIdx.x * BX + tx - RADIUS, 0), w - 1);
            ta[ty][tx] = __ldg(a + (size_t)gy * w + gx);
            tb[ty][tx] = __ldg(b + (size_t)gy * w + gx);
        }
    }
    __syncthreads();

#if SEP
    // horizontal sums: hs[q][row][col], q = a, b, aa, bb, ab
    __shared__ float hs[5][TILE_H][BX];
    for (int e = threadIdx.y * BX + threadIdx.x; e < TILE_H * BX; e += BX * BY) {
        const int row = e / BX, col = e % BX;
        float sa = 0.0f, sb = 0.0f, saa = 0.0f, sbb = 0.0f, sab = 0.0f;
#pragma unroll
        for (int dx = 0; dx < WIN; ++dx) {
            const float va = ta[row][col + dx], vb = tb[row][col + dx];
            sa += va;
            sb += vb;
            saa += va * va;
            sbb += vb * vb;
            sab += va * vb;
        }
        hs[0][row][col] = sa;
        hs[1][row][col] = sb;
        hs[2][row][col] = saa;
        hs[3][row][col] = sbb;
        hs[4][row][col] = sab;
    }
    __syncthreads();
#endif

    if (x >= w)
        return;
#pragma unroll
    for (int r = 0; r < RY; ++r) {
        const int y = y0 + r * BY;
        if (y >= h)
            break;
        const int ly = threadIdx.y + r * BY;
        float sa = 0.0f, sb = 0.0f, saa = 0.0f, sbb = 0.0f, sab = 0.0f;
#if SEP
#pragma unroll
        for (int dy = 0; dy < WIN; ++dy) {
            sa += hs[0][ly + dy][threadIdx.x];
            sb += hs[1][ly + dy][threadIdx.x];
            saa += hs[2][ly + dy][threadIdx.x];
            sbb += hs[3][ly + dy][threadIdx.x];
            sab += hs[4][ly + dy][threadIdx.x];
        }
#else
#pragma unroll
        for (int dy = 0; dy < WIN; ++dy) {
#pragma unroll
            for (int dx = 0; dx < WIN; ++dx) {
                const float va = ta[ly + dy][threadIdx.x + dx];
                const float vb = tb[ly + dy][threadIdx.x + dx];
                sa += va;
                sb += vb;
                saa += va * va;
                sbb += vb * vb;
                sab += va * vb;
            }
        }
#endif
        ssim[(size_t)y * w + x] = ssim_of(sa, sb, saa, sbb, sab);
    }
}
