// Normalized cross-correlation of an 8 x 8 template t against every valid 8 x 8 window of an
// image I (H x W, row-major), output (H - 7) x (W - 7):
//   tc = t - mean(t),  tss = sum tc^2,
//   ncc[y][x] = sum_{dy,dx} I[y+dy][x+dx] tc[dy][dx] / sqrt((sII - sI^2 / 64) tss)
// with sI, sII the window's sum and sum of squares (its mean and variance, found in the
// same loop; the template's zero mean removes the window mean from the numerator). The
// template is read through a global pointer; each 32 x 8 block stages its image tile plus
// the 7-pixel apron right and below in shared memory.
// Launch: grid = (ceil((W - 7) / 32), ceil((H - 7) / 8)), block = (32, 8).

#define PATCH 8
#define APRON (PATCH - 1)
#define TILE_X 32
#define TILE_Y 8

extern "C" __global__ void ncc_patch8(float *out, const float *img, const float *tpl, int W, int H)
{
    __shared__ float win[TILE_Y + APRON][TILE_X + APRON];

    const int ow = W - APRON, oh = H - APRON;
    const int x0 = blockIdx.x * TILE_X, y0 = blockIdx.y * TILE_Y;

    for (int r = threadIdx.y; r < TILE_Y + APRON; r += TILE_Y) {
        const int gy = y0 + r;
        const float *src = img + (size_t)gy * W;
        for (int c = threadIdx.x; c < TILE_X + APRON; c += TILE_X) {
            const int gx = x0 + c;
            win[r][c] = (gy < H && gx < W) ? src[gx] : 0.0f;
        }
    }
    __syncthreads();

    const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x >= ow || y >= oh)
        return;

    float tsum = 0.0f;
    for (int k = 0; k < PATCH * PATCH; ++k)
        tsum += tpl[k];
    const float tmean = tsum * (1.0f / (PATCH * PATCH));
    float tss = 0.0f;
    for (int k = 0; k < PATCH * PATCH; ++k) {
        const float d = tpl[k] - tmean;
        tss += d * d;
    }

    float sI = 0.0f, sII = 0.0f, sIT = 0.0f;
    for (int dy = 0; dy < PATCH; ++dy) {
        const float *wrow = &win[threadIdx.y + dy][threadIdx.x];
        const float *trow = tpl + dy * PATCH;
        for (int dx = 0; dx < PATCH; ++dx) {
            const float p = wrow[dx];
            sI += p;
            sII += p * p;
            sIT += p * (trow[dx] - tmean);
        }
    }
    const float var = sII - sI * sI * (1.0f / (PATCH * PATCH));
    out[(size_t)y * ow + x] = sIT / sqrtf(var * tss);
}
