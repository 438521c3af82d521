// Dilated ("a trous") 5 x 5 cross-correlation of a stack of float images, dilation 2,
// "valid" output (no padding: each output sees a 9 x 9 footprint, so the output is
// (H - 8) x (W - 8)): out[img][oy][ox] = sum over r, c of taps[r * 5 + c] *
// in[img][oy + 2 r][ox + 2 c]. The 25 taps sit in a flat 1-D __constant__ array indexed
// r * 5 + c; the image is blockIdx.z, found by indexing with a size_t plane offset; a thread
// past the output returns early. One output pixel a thread, every tap a load through L1.
// Launch: grid = ((W - 8 + 31) / 32, (H - 8 + 7) / 8, images), block = (32, 8).

#define KW 5
#define DIL 2

__constant__ float taps[KW * KW];

extern "C" __global__ void dil2_conv5_valid(float *out, const float *in, int W, int H)
{
    const int outW = W - (KW - 1) * DIL;
    const int outH = H - (KW - 1) * DIL;
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= outW || oy >= outH)
        return;

    const size_t inPlane = (size_t)blockIdx.z * H * W;
    const size_t outPlane = (size_t)blockIdx.z * outH * outW;

    float sum = 0.0f;
    for (int r = 0; r < KW; r++) {
        const size_t rowStart = inPlane + (size_t)(oy + r * DIL) * W + ox;
        for (int c = 0; c < KW; c++)
            sum += taps[r * KW + c] * in[rowStart + c * DIL];
    }
    out[outPlane + (size_t)oy * outW + ox] = sum;
}
