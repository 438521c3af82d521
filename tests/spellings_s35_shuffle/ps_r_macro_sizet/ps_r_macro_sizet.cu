// Session 35 respelling of corpus_compute_unseen22/pixel_shuffle_r2: the factor and the
// block as macros, size_t indices throughout, the output extents in size_t locals before
// the thread's index, the source reached by pointer arithmetic from a plane's base, the
// work under if (o < total) { .. }, the row split off first and then split again.
// Launch: grid = ((N * C * 4 * H * W + 255) / 256), block = (256).
#define R 2
#define THREADS 256

extern "C" __global__ void ps_r_macro_sizet(float *out, const float *in, int N, int C, int H,
                                            int W)
{
    const size_t ow = (size_t)W * R;
    const size_t oh = (size_t)H * R;
    const size_t total = (size_t)N * C * oh * ow;
    const size_t o = (size_t)blockIdx.x * THREADS + threadIdx.x;
    if (o < total) {
        const size_t x = o % ow;
        const size_t row = o / ow;  /* over every image's every plane */
        const size_t y = row % oh;
        const size_t plane = row / oh;
        const float *base = in + (plane * R * R + (y % R) * R + x % R) * (size_t)H * W;
        out[o] = *(base + (y / R) * W + x / R);
    }
}
