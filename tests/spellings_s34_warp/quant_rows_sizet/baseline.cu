// Session 34 respelling of corpus_compute_unseen26/rowquant_h16_s8: (32, 4) blocks, the row
// threadIdx.y, the lane threadIdx.x itself; size_t row offsets into local row pointers, an
// unsigned column, a helper for the code, a doubling xor butterfly; __restrict__ inputs
// (the outputs may alias each other, not the row).
// Launch: grid = ((rows + 3) / 4), block = (32, 4).
#include <cuda_fp16.h>

static __device__ __forceinline__ signed char to_code(float v, float inv)
{
    const int q = __float2int_rn(v * inv);
    return (signed char)(q < -127 ? -127 : (q > 127 ? 127 : q));
}

extern "C" __global__ void quant_rows(signed char *out, float *row_scale,
                                      const __half *__restrict__ in, int rows, int cols)
{
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows)
        return;
    const size_t base = (size_t)row * (size_t)cols;
    const __half *src = in + base;
    signed char *dst = out + base;
    float peak = 0.0f;
    for (unsigned j = threadIdx.x; j < (unsigned)cols; j += 32u) {
        const float a = fabsf(__half2float(src[j]));
        peak = a > peak ? a : peak;
    }
    for (int w = 1; w < 32; w <<= 1)
        peak = fmaxf(peak, __shfl_xor_sync(0xffffffffu, peak, w));
    const float inv = peak > 0.0f ? 127.0f / peak : 0.0f;
    if (threadIdx.x == 0)
        row_scale[row] = peak > 0.0f ? peak / 127.0f : 1.0f;
    for (unsigned j = threadIdx.x; j < (unsigned)cols; j += 32u)
        dst[j] = to_code(__half2float(src[j]), inv);
}
