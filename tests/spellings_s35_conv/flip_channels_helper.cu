// The flipped multi-channel convolution respelled: the channel loop innermost-but-one
// (for i, for c, for j), a zero-padding helper taking the plane pointer, fmaf accumulation,
// the bounds check as an `if` around the work.
#define NC 4
#define KS 5

__constant__ float weights[NC * KS * KS];

__device__ __forceinline__ float at_or_zero(const float *p, int r, int col, int rows, int cols)
{
    return (r >= 0 && r < rows && col >= 0 && col < cols) ? p[r * cols + col] : 0.0f;
}

extern "C" __global__ void conv5_channels(float *out, const float *in, int h, int w)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < w && row < h) {
        float acc = 0.0f;
        for (int dy = 0; dy < KS; ++dy) {
            for (int c = 0; c < NC; ++c) {
                const float *p = in + c * h * w;
                for (int dx = 0; dx < KS; ++dx)
                    acc = fmaf(weights[(c * KS + dy) * KS + dx],
                               at_or_zero(p, row + KS / 2 - dy, col + KS / 2 - dx, h, w), acc);
            }
        }
        out[row * w + col] = acc;
    }
}
