// The late plane offset respelled: a true 5 x 5 convolution (the filter flipped), macros,
// the plane's size and its pointer both declared after the early return (the pointer read
// by the taps through the size), size_t arithmetic, the taps skipped with `continue`.
#define KS 5
#define KR (KS / 2)

__constant__ float c_weights[KS][KS];

extern "C" __global__ void conv5x5_zpad_batch(float *out, const float *in, int width,
                                              int height)
{
    const int px = blockIdx.x * blockDim.x + threadIdx.x;
    const int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (py >= height || px >= width)
        return;
    const size_t area = (size_t)width * (size_t)height;
    const float *src = in + (size_t)blockIdx.z * area;
    float *dst = out + (size_t)blockIdx.z * area;
    float s = 0.f;
    for (int r = 0; r < KS; r++) {
        const int iy = py + KR - r;
        if (iy < 0 || iy >= height) continue;
        for (int c = 0; c < KS; c++) {
            const int ix = px + KR - c;
            if (ix < 0 || ix >= width) continue;
            s += c_weights[r][c] * src[(size_t)iy * width + ix];
        }
    }
    dst[(size_t)py * width + px] = s;
}
