// Masked fill with scale: out[i] = mask[i] ? value : in[i] * scale over n floats, mask one
// byte an element (nonzero: filled). A grid-stride loop with a 64-bit (size_t) index, one
// element a thread a step.
// Launch: grid = ((n + 1023) / 1024), block = (256): four steps of the stride a thread.

extern "C" __global__ void masked_fill_scale(float *out, const float *in,
                                             const unsigned char *mask, float value,
                                             float scale, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = mask[i] ? value : in[i] * scale;
    }
}
