// Layer normalisation of the rows of a float matrix, a warp a row: y = (x - mean) /
// sqrt(var + eps) * gamma + beta over each row of `cols` values, the variance the mean of
// (x - mean)^2 (two passes over the row, as a careful programmer writes it). The block is
// 32 x 4: threadIdx.x is the lane, threadIdx.y picks the block's row; a warp leaves at
// once past the last row. Sums by an xor butterfly helper that leaves the total in every
// lane; the row is read three times (L1 / L2 keep it).
// Launch: grid = ((rows + 3) / 4), block = (32, 4).

__device__ __forceinline__ float warp_allreduce_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void layernorm_rows_yw(float *y, const float *x, const float *gamma,
                                             const float *beta, int rows, int cols, float eps)
{
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows)
        return;
    const int lane = threadIdx.x;
    const float *xr = x + (size_t)row * cols;
    float *yr = y + (size_t)row * cols;

    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += xr[c];
    const float mean = warp_allreduce_sum(s) / cols;

    float ss = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        const float d = xr[c] - mean;
        ss += d * d;
    }
    const float rstd = rsqrtf(warp_allreduce_sum(ss) / cols + eps);

    for (int c = lane; c < cols; c += 32)
        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
