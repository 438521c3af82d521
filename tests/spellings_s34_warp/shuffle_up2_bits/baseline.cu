// Session 34 respelling of corpus_compute_unseen22/pixel_shuffle_r2: the factor 2 as shifts
// and masks, the output sizes in locals, a guarded body, the read through __ldg, an
// unsigned plane offset.
// Launch: grid = ((N * C * 4 * H * W + 255) / 256), block = (256).
extern "C" __global__ void shuffle_up2(float *y, const float *x, int N, int C, int H, int W)
{
    const int ow = W << 1;
    const int oh = H << 1;
    const int total = N * C * oh * ow;
    const int g = threadIdx.x + 256 * blockIdx.x;
    if (g < total) {
        const int col = g % ow;
        const int line = (g / ow) % oh;
        const int plane = g / (ow * oh);
        const int img = plane / C;
        const int chan = plane % C;
        const unsigned from = (unsigned)(((img * C + chan) * 4 + ((line & 1) << 1) + (col & 1)) * H
                                         + (line >> 1)) * (unsigned)W + (unsigned)(col >> 1);
        y[g] = __ldg(&x[from]);
    }
}
