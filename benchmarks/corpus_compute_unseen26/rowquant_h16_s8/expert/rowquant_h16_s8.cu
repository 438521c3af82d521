// Symmetric int8 quantisation of half rows, a warp a row: the row's largest magnitude by a
// butterfly of warp shuffles, scale[row] = amax / 127 (1 for an all-zero row), then each
// element q = x * (127 / amax) rounded to nearest even and clamped to [-127, 127], the row
// read a second time from global memory (L1 / L2). Four warps (rows) a block.
// Launch: grid = ((rows + 3) / 4), block = (128).

#include <cuda_fp16.h>

constexpr int kWarpsPerBlock = 4;
constexpr int kLanes = 32;

extern "C" __global__ void rowquant_h16_s8(signed char *q, float *scale, const __half *x,
                                           int rows, int cols)
{
    const int lane = threadIdx.x % kLanes;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kLanes;
    if (row >= rows)
        return; // the whole warp leaves together
    const __half *src = x + (size_t)row * cols;

    float amax = 0.0f;
    for (int c = lane; c < cols; c += kLanes)
        amax = fmaxf(amax, fabsf(__half2float(src[c])));
    for (int m = kLanes / 2; m > 0; m >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));

    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    if (lane == 0)
        scale[row] = amax > 0.0f ? amax / 127.0f : 1.0f;

    signed char *dst = q + (size_t)row * cols;
    for (int c = lane; c < cols; c += kLanes) {
        int v = __float2int_rn(__half2float(src[c]) * inv);
        dst[c] = (signed char)max(-127, min(127, v));
    }
}
