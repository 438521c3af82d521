// Row-wise log-softmax of a half matrix, in float: out[r][c] = x[r][c] - lse_r with
// lse_r = max_r + log(sum_c exp(x[r][c] - max_r)). One warp a row, eight rows a block;
// three passes over the row (its max, its sum of exponentials, the outputs), a lane taking
// every 32nd element; the warp's max and sum by xor shuffles.
// Launch: grid = ((rows + 7) / 8), block = (32, 8).

#include <cuda_fp16.h>

__device__ __forceinline__ float warp_max(float v)
{
    for (int mask = 16; mask > 0; mask >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, mask));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int mask = 16; mask > 0; mask >>= 1)
        v += __shfl_xor_sync(0xffffffff, v, mask);
    return v;
}

extern "C" __global__ void logsoftmax_h16_warp(__half *out, const __half *x, int rows, int cols)
{
    int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows)
        return;  // the whole warp leaves
    int lane = threadIdx.x;
    const __half *xr = x + (size_t)row * cols;
    __half *yr = out + (size_t)row * cols;

    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32)
        m = fmaxf(m, __half2float(xr[c]));
    m = warp_max(m);

    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += expf(__half2float(xr[c]) - m);
    s = warp_sum(s);

    float lse = m + logf(s);
    for (int c = lane; c < cols; c += 32)
        yr[c] = __float2half(__half2float(xr[c]) - lse);
}
