// A 3 x 3 cross-correlation dilated by 4 in both directions (footprint 9 x 9) of a stack of
// images, the outputs of the folder's launch ((H - 8) x (W - 8)): macros, the pixel read
// through a helper taking the row and column, fmaf, size_t offsets, an early return.
#define TAPS 3
#define GAP 4

__constant__ float taps[25];

__device__ __forceinline__ float pix(const float *img, int W, int row, int col)
{
    return img[(size_t)row * W + col];
}

extern "C" __global__ void dil2_conv5_valid(float *out, const float *in, int W, int H)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int outW = W - (TAPS - 1) * GAP, outH = H - (TAPS - 1) * GAP;
    if (ox >= outW || oy >= outH)
        return;
    const float *img = in + (size_t)blockIdx.z * H * W;
    float s = 0.0f;
    for (int a = 0; a < TAPS; ++a)
        for (int b = 0; b < TAPS; ++b)
            s = fmaf(taps[a * TAPS + b], pix(img, W, oy + GAP * a, ox + GAP * b), s);
    out[(size_t)blockIdx.z * outH * outW + (size_t)oy * outW + ox] = s;
}
