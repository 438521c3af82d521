// Respelling of conv5x5_zpad_batch (set 27): the same true 5 x 5 convolution (filter
// flipped), written with macros, an early return, the plane offset folded into a size_t
// index rather than a pointer, and zero padding as `continue` skips.
#define K 5
#define R (K / 2)

__constant__ float c_weights[K][K];

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int width,
                                              int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    size_t plane = (size_t)blockIdx.z * (size_t)width * (size_t)height;
    float sum = 0.0f;
    for (int i = 0; i < K; i++) {
        int sy = y - (i - R);
        if (sy < 0 || sy >= height) continue;
        for (int j = 0; j < K; j++) {
            int sx = x - (j - R);
            if (sx < 0 || sx >= width) continue;
            sum += c_weights[i][j] * in[plane + (size_t)sy * width + sx];
        }
    }
    out[plane + (size_t)y * width + x] = sum;
}
