// Half-resolution 3x3 filter pass (zero outside the image, weights in __constant__), then
// 1.25 * v - 0.1 saturated to [0, 1]. Plain-int hand: restrict pointers, an index macro, the
// work under an if-block, the taps as one loop of nine (row and column by / and %), the
// border test as one condition.

#define AT(img, row, col, width) (img)[(row) * (width) + (col)]

__constant__ float c_weights[9];

extern "C" __global__ void conv3x3_s2_sat(float* __restrict__ dst, const float* __restrict__ src,
                                          int W, int H)
{
    const int ox = threadIdx.x + blockDim.x * blockIdx.x;
    const int oy = threadIdx.y + blockDim.y * blockIdx.y;
    const int ow = W / 2;
    if (ox < ow && oy < H / 2) {
        float acc = 0.0f;
        for (int t = 0; t < 9; ++t) {
            const int y = 2 * oy + t / 3 - 1;
            const int x = 2 * ox + t % 3 - 1;
            if (y >= 0 && y < H && x >= 0 && x < W)
                acc = fmaf(AT(src, y, x, W), c_weights[t], acc);
        }
        AT(dst, oy, ox, ow) = __saturatef(fmaf(acc, 1.25f, -0.1f));
    }
}
