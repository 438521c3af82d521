// Session 35 respelling of the warp-per-row family (corpus_compute_unseen26/
// rowquant_h16_s8, corpus_compute_unseen27/layernorm_rows_yw): RMS normalisation of the
// half rows of a matrix, a warp a row: y = x / sqrt(mean(x^2) + eps) * w, in float, stored
// as half. Macros for the rows a block and the warp width, the lane `& 31` and the warp
// `>> 5` of a 1-D block, a guard (no early return), __shfl_down_sync to lane 0 then a
// broadcast from it, the row read twice (L1 / L2).
// Launch: grid = ((rows + 7) / 8), block = (256).
#include <cuda_fp16.h>

#define RPB 8
#define WARP 32

extern "C" __global__ void rmsnorm_rows(__half *y, const __half *x, const float *w, int rows,
                                        int cols, float eps)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * RPB + (threadIdx.x >> 5);
    if (row < rows) {
        const __half *xr = x + (size_t)row * cols;
        __half *yr = y + (size_t)row * cols;
        float ss = 0.0f;
        for (int c = lane; c < cols; c += WARP) {
            const float v = __half2float(xr[c]);
            ss += v * v;
        }
        for (int off = WARP / 2; off > 0; off >>= 1)
            ss += __shfl_down_sync(0xffffffffu, ss, off);
        ss = __shfl_sync(0xffffffffu, ss, 0);
        const float scale = rsqrtf(ss / (float)cols + eps);
        for (int c = lane; c < cols; c += WARP)
            yr[c] = __float2half(__half2float(xr[c]) * scale * w[c]);
    }
}
