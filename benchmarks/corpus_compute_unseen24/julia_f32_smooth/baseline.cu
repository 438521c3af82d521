// Julia set of z -> z^2 + c, c = -0.123 + 0.745i (Douady's rabbit), with smooth colouring,
// in float. Pixel (px, py) of a width x height image starts at
// z = (-1.6 + 3.2 px / width, -1.2 + 2.4 py / height) and iterates z <- z^2 + c while |z|^2 <= 256 and fewer than 200 steps were taken.
// An orbit that escapes after `it` steps gets the smooth count
//   nu = it + 1 - log2(log |z|)      (log |z| = 0.5 log |z|^2),
// one that does not gets 0. A 2-D grid of 16 x 16 blocks, one pixel a thread.
// Launch: grid = ((width + 15) / 16, (height + 15) / 16), block = (16, 16).

#define MAX_IT 200
#define BAILOUT 256.0f

__device__ float smooth_count(float zr, float zi)
{
    const float cr = -0.123f, ci = 0.745f;
    int it = 0;
    float r2 = zr * zr + zi * zi;
    while (r2 <= BAILOUT && it < MAX_IT) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        r2 = zr * zr + zi * zi;
        ++it;
    }
    if (r2 <= BAILOUT)
        return 0.0f;
    return (float)it + 1.0f - log2f(0.5f * logf(r2));
}

extern "C" __global__ void julia_f32_smooth(float *img, int width, int height)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height)
        return;
    float zr = -1.6f + 3.2f * (float)px / (float)width;
    float zi = -1.2f + 2.4f * (float)py / (float)height;
    img[py * width + px] = smooth_count(zr, zi);
}
