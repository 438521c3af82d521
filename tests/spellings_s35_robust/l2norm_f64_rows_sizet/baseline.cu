// Session 35 respelling of the warp-per-row family (corpus_compute_unseen27/
// layernorm_rows_yw, corpus_compute_unseen26/rowquant_h16_s8): each float row scaled to
// unit Euclidean length, its sum of squares accumulated in double: y = x / max(||x||, eps).
// A (32, 4) block (threadIdx.x the lane, threadIdx.y the block's row), size_t row offsets
// and columns, pointer arithmetic, an xor butterfly helper leaving the total in every lane,
// an early return past the last row.
// Launch: grid = ((rows + 3) / 4), block = (32, 4).

static __device__ double lanes_total(double v)
{
    for (int m = 1; m < 32; m <<= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}

extern "C" __global__ void l2norm_rows(float *out, const float *in, size_t rows, size_t cols,
                                       float eps)
{
    const size_t r = (size_t)blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rows)
        return;
    const float *src = in + r * cols;
    float *dst = out + r * cols;
    double ss = 0.0;
    for (size_t c = threadIdx.x; c < cols; c += 32) {
        const double v = *(src + c);
        ss += v * v;
    }
    const double norm = sqrt(lanes_total(ss));
    const float inv = (float)(1.0 / (norm > (double)eps ? norm : (double)eps));
    for (size_t c = threadIdx.x; c < cols; c += 32)
        *(dst + c) = *(src + c) * inv;
}
