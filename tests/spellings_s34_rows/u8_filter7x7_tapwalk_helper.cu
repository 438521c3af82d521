// Respelling of u8_filter7x7_const (session 34): constexpr sizes, a clamp helper, size_t
// row offsets, the x / y test wrapping the work instead of an early return, and each tap
// fetched into a local by its own postfix walk `const float w = *tap++;` before the add.

constexpr int kRadius = 3;
constexpr int kSide = 2 * kRadius + 1;

__constant__ float taps[kSide * kSide];

static __device__ __forceinline__ int clamp_index(int v, int hi)
{
    return v < 0 ? 0 : (v > hi ? hi : v);
}

extern "C" __global__ void u8_filter7x7_const(float *out, const unsigned char *img, int width,
                                              int height, float scale)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < width && row < height) {
        float acc = 0.0f;
        const float *tap = taps;
        for (int i = 0; i < kSide; i++) {
            const size_t base = (size_t)clamp_index(row + i - kRadius, height - 1) * width;
            for (int j = 0; j < kSide; j++) {
                const float w = *tap++;
                acc += w * (float)img[base + clamp_index(col + j - kRadius, width - 1)];
            }
        }
        out[(size_t)row * width + col] = acc * scale;
    }
}
