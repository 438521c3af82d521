// SSIM map of two grey images a and b (h x w, row-major, 0..255 as floats) over 7 x 7
// uniform windows, edges replicated (coordinates clamped):
//   mu_a = E[a], var_a = E[a^2] - mu_a^2, cov = E[ab] - mu_a mu_b (the window's 49 pixels)
//   ssim = (2 mu_a mu_b + C1)(2 cov + C2) / ((mu_a^2 + mu_b^2 + C1)(var_a + var_b + C2))
// with C1 = (0.01 * 255)^2, C2 = (0.03 * 255)^2. Each BLOCK_W x BLOCK_H block stages both
// images' pixels and a three-pixel apron in shared memory; each thread sums its window.
// Launch: grid = ((w + 15) / 16, (h + 15) / 16), block = (16, 16).

#define BLOCK_W 16
#define BLOCK_H 16
#define RADIUS 3
#define TILE_W (BLOCK_W + 2 * RADIUS)
#define TILE_H (BLOCK_H + 2 * RADIUS)

extern "C" __global__ void ssim7_tile(float *ssim, const float *a, const float *b, int w, int h)
{
    __shared__ float ta[TILE_H][TILE_W];
    __shared__ float tb[TILE_H][TILE_W];

    const int x = blockIdx.x * BLOCK_W + threadIdx.x;
    const int y = blockIdx.y * BLOCK_H + threadIdx.y;

    for (int ty = threadIdx.y; ty < TILE_H; ty += BLOCK_H) {
        const int gy = min(max((int)(blockIdx.y * BLOCK_H) + ty - RADIUS, 0), h - 1);
        for (int tx = threadIdx.x; tx < TILE_W; tx += BLOCK_W) {
            const int gx = min(max((int)(blockIdx.x * BLOCK_W) + tx - RADIUS, 0), w - 1);
            ta[ty][tx] = a[gy * w + gx];
            tb[ty][tx] = b[gy * w + gx];
        }
    }
    __syncthreads();

    if (x >= w || y >= h)
        return;

    float sa = 0.0f, sb = 0.0f, saa = 0.0f, sbb = 0.0f, sab = 0.0f;
    for (int dy = 0; dy <= 2 * RADIUS; dy++) {
        for (int dx = 0; dx <= 2 * RADIUS; dx++) {
            const float va = ta[threadIdx.y + dy][threadIdx.x + dx];
            const float vb = tb[threadIdx.y + dy][threadIdx.x + dx];
            sa += va;
            sb += vb;
            saa += va * va;
            sbb += vb * vb;
            sab += va * vb;
        }
    }

    const float inv = 1.0f / 49.0f;
    const float C1 = 6.5025f, C2 = 58.5225f;
    const float ma = sa * inv, mb = sb * inv;
    const float va = saa * inv - ma * ma;
    const float vb = sbb * inv - mb * mb;
    const float cab = sab * inv - ma * mb;
    ssim[y * w + x] = ((2.0f * ma * mb + C1) * (2.0f * cab + C2)) /
                      ((ma * ma + mb * mb + C1) * (va + vb + C2));
}
