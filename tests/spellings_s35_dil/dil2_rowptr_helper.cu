// A 5 x 3 cross-correlation dilated by 2 down the rows only (footprint 9 x 3) of a stack of
// images, the outputs of the folder's launch ((H - 8) x (W - 8)): macros, a size_t plane,
// the row pointer `const float *row = ...` declared in the row loop, the tap read through a
// helper, fmaf, an early return.
#define ROWS 5
#define COLS 3
#define STEP 2

__constant__ float taps[ROWS * ROWS];

__device__ __forceinline__ float at(const float *row, int j) { return row[j]; }

extern "C" __global__ void dil2_conv5_valid(float *out, const float *in, int W, int H)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int rowOut = blockIdx.y * blockDim.y + threadIdx.y;
    const int outW = W - 8, outH = H - 8;
    if (col >= outW || rowOut >= outH)
        return;
    const size_t plane = (size_t)blockIdx.z * (size_t)H * (size_t)W;
    float *dst = out + (size_t)blockIdx.z * outH * outW;
    float s = 0.0f;
    for (int r = 0; r < ROWS; ++r) {
        const float *row = in + plane + (size_t)(rowOut + STEP * r) * W + col;
        for (int c = 0; c < COLS; ++c)
            s = fmaf(taps[r * ROWS + c], at(row, c), s);
    }
    dst[(size_t)rowOut * outW + col] = s;
}
