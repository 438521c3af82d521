// 7 x 7 filter of an 8-bit grey image into float: out[y][x] = scale * the sum over the taps
// of taps[dy][dx] * img[y + dy - 3][x + dx - 3], edges replicated (coordinates clamped into
// the image); the 49 taps in constant memory, walked with a pointer. One output pixel a
// thread, each tap a byte load through L1.
// Launch: grid = ((width + 31) / 32, (height + 7) / 8), block = (32, 8).

#define RADIUS 3
#define TAPS (2 * RADIUS + 1)

__constant__ float taps[TAPS * TAPS];

extern "C" __global__ void u8_filter7x7_const(float *out, const unsigned char *img, int width,
                                              int height, float scale)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;

    float sum = 0.0f;
    const float *t = taps;
    for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
        int yy = min(max(y + dy, 0), height - 1);
        const unsigned char *row = img + (size_t)yy * width;
        for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
            int xx = min(max(x + dx, 0), width - 1);
            sum += *t++ * (float)row[xx];
        }
    }
    out[(size_t)y * width + x] = sum * scale;
}
