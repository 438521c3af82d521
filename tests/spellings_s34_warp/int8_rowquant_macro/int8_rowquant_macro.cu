// Session 34 respelling of corpus_compute_unseen26/rowquant_h16_s8: macros for the warp and
// the rows a block, the lane and row by mask and shift, the row's place an int index (no
// row pointer), a guarded body instead of an early return, shfl_down then a broadcast,
// the statistic stored after the codes' scale is known and before they are written.
// Launch: grid = ((rows + 7) / 8), block = (256).
#include <cuda_fp16.h>

#define WARP 32
#define ROWS_PB 8
#define QMAX 127.0f

extern "C" __global__ void int8_rowquant(signed char *codes, float *scales, const __half *act,
                                         int rows, int cols)
{
    int lane = threadIdx.x & (WARP - 1);
    int r = blockIdx.x * ROWS_PB + (threadIdx.x >> 5);
    if (r < rows) {
        float m = 0.0f;
        for (int k = lane; k < cols; k += WARP)
            m = fmaxf(m, fabsf(__half2float(act[r * cols + k])));
        for (int o = WARP / 2; o > 0; o /= 2)
            m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
        m = __shfl_sync(0xffffffffu, m, 0);
        float s = m > 0.0f ? QMAX / m : 0.0f;
        if (lane == 0)
            scales[r] = m > 0.0f ? m / QMAX : 1.0f;
        for (int k = lane; k < cols; k += WARP) {
            int v = __float2int_rn(__half2float(act[r * cols + k]) * s);
            codes[r * cols + k] = (signed char)max(-127, min(127, v));
        }
    }
}
