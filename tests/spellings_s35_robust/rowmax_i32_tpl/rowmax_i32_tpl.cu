// Session 35 respelling of the warp-per-row family (corpus_compute_unseen26/
// rowquant_h16_s8, corpus_compute_unseen27/layernorm_rows_yw): each row of integer counts
// as frequencies, p[c] = count[c] / total (0 for an empty row), the total an exact integer
// sum by an xor butterfly. The body a template over the warps a block instantiated at 4 by
// the extern "C" entry, the lane and the warp from threadIdx.x, while loops over the
// columns, __ldg reads through const __restrict__ pointers, an early return.
// Launch: grid = ((rows + 3) / 4), block = (128).

template <int WARPS>
__device__ void freq_body(float *__restrict__ p, const int *__restrict__ count, int rows,
                          int cols)
{
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * WARPS + threadIdx.x / 32;
    if (row >= rows)
        return;
    const int *cr = count + row * cols;
    float *pr = p + row * cols;
    int total = 0;
    int c = lane;
    while (c < cols) {
        total += __ldg(&cr[c]);
        c += 32;
    }
    for (int m = 16; m > 0; m >>= 1)
        total += __shfl_xor_sync(0xffffffffu, total, m);
    const float inv = total > 0 ? 1.0f / (float)total : 0.0f;
    c = lane;
    while (c < cols) {
        pr[c] = (float)__ldg(&cr[c]) * inv;
        c += 32;
    }
}

extern "C" __global__ void row_freq(float *__restrict__ p, const int *__restrict__ count,
                                    int rows, int cols)
{
    freq_body<4>(p, count, rows, cols);
}
