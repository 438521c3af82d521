// Respelling of u8_filter7x7_const (session 34): `#define KS 7` and a half-width macro,
// int offsets, thread index first in the point's sums, the tap walk as the product's second
// factor (`(float)src[cx] * *(w++)`, the pointer set from `&taps[0]`), the clamps written as
// nested ternaries of named temporaries.

#define KS 7
#define HALF (KS / 2)

__constant__ float taps[KS * KS];

extern "C" __global__ void u8_filter7x7_const(float *out, const unsigned char *img, int width,
                                              int height, float scale)
{
    int px = threadIdx.x + blockIdx.x * blockDim.x;
    int py = threadIdx.y + blockIdx.y * blockDim.y;
    if (px >= width || py >= height)
        return;
    float s = 0.0f;
    const float *w = &taps[0];
    for (int ky = 0; ky < KS; ++ky) {
        int sy = py + ky - HALF;
        int cy = sy < 0 ? 0 : sy >= height ? height - 1 : sy;
        const unsigned char *src = img + cy * width;
        for (int kx = 0; kx < KS; ++kx) {
            int sx = px + kx - HALF;
            int cx = sx < 0 ? 0 : sx >= width ? width - 1 : sx;
            s += (float)src[cx] * *(w++);
        }
    }
    out[py * width + px] = s * scale;
}
