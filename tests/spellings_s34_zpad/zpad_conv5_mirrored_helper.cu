// Respelling of conv5x5_zpad_batch (set 27): the same convolution written as a
// correlation-order window (input rows y - 2 .. y + 2 upwards) against the mirrored filter
// w[K - 1 - i][K - 1 - j], a zero-padding helper, constexpr sizes, a guard around the work
// and the planes as pointers on blockIdx.z. (Its taps are added in the other order from the
// corpus kernel's: it is compared with itself as written.)
constexpr int K = 5;
constexpr int HALF = K / 2;

__constant__ float c_weights[K][K];

__device__ __forceinline__ float pixel_or_zero(const float *plane, int r, int c, int w, int h)
{
    return (r >= 0 && r < h && c >= 0 && c < w) ? plane[r * w + c] : 0.0f;
}

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int width,
                                              int height)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const float *plane = in + (size_t)blockIdx.z * width * height;
    if (col < width && row < height) {
        float acc = 0.0f;
        for (int i = 0; i < K; ++i) {
            for (int j = 0; j < K; ++j) {
                acc += c_weights[K - 1 - i][K - 1 - j] *
                       pixel_or_zero(plane, row - HALF + i, col - HALF + j, width, height);
            }
        }
        out[(size_t)blockIdx.z * width * height + row * width + col] = acc;
    }
}
