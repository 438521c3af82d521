// Row gather (index_select along the first dimension): out[i][:] = src[idx[i]][:] for
// nidx 64-bit row indices into a [nsrc, D] float table; an index outside [0, nsrc) (-1
// marks padding) gives a row of zeros. One output element a thread over a flat size_t
// index: the output row by a division, the column the remainder.
// Launch: grid = ((nidx * D + 255) / 256), block = (256).

extern "C" __global__ void take_rows_i64(float *out, const float *src, const long long *idx,
                                         long long nsrc, int D, size_t total)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total)
        return;
    size_t i = t / D;
    int c = (int)(t - i * D);
    long long r = idx[i];
    out[t] = (r >= 0 && r < nsrc) ? src[(size_t)r * D + c] : 0.0f;
}
