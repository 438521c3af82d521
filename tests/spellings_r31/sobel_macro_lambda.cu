/* Sobel operator: |grad| and its angle, replicate padding.
 * One output pixel per thread, TILE x TILE threads, an apron of one pixel. */

#define TILE 16
#define HALO 1
#define SW (TILE + 2 * HALO)
#define CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))

extern "C" __global__ void sobel_magdir_tile(float *mag, float *dir, const float *img, int w, int h)
{
    __shared__ float patch[SW][SW];
    int tx = threadIdx.x, ty = threadIdx.y;
    int gx0 = blockIdx.x * blockDim.x - HALO;
    int gy0 = blockIdx.y * blockDim.y - HALO;

    for (int r = ty; r < SW; r += TILE)
        for (int c = tx; c < SW; c += TILE)
            patch[r][c] = img[CLAMP(gy0 + r, 0, h - 1) * w + CLAMP(gx0 + c, 0, w - 1)];
    __syncthreads();

    int col = blockIdx.x * blockDim.x + tx;
    int row = blockIdx.y * blockDim.y + ty;
    if (col >= w || row >= h)
        return;

    auto P = [&](int dy, int dx) { return patch[ty + HALO + dy][tx + HALO + dx]; };
    float sx = (P(-1, 1) + 2.0f * P(0, 1) + P(1, 1)) - (P(-1, -1) + 2.0f * P(0, -1) + P(1, -1));
    float sy = (P(1, -1) + 2.0f * P(1, 0) + P(1, 1)) - (P(-1, -1) + 2.0f * P(-1, 0) + P(-1, 1));
    mag[row * w + col] = sqrtf(sx * sx + sy * sy);
    dir[row * w + col] = atan2f(sy, sx);
}
