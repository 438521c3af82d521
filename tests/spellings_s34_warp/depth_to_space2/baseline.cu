// Session 34 respelling of corpus_compute_unseen22/pixel_shuffle_r2: a constexpr factor and
// block size, a size_t flat index, an early return, the source place from a helper and
// read through pointer arithmetic.
// Launch: grid = ((N * C * 4 * H * W + 255) / 256), block = (256).
constexpr int kUp = 2;
constexpr int kThreads = 256;

static __device__ __forceinline__ size_t source_at(size_t n, size_t ch, size_t y, size_t x,
                                                   int C, int H, int W)
{
    return ((n * (size_t)(C * kUp * kUp) + ch) * (size_t)H + y) * (size_t)W + x;
}

extern "C" __global__ void depth_to_space2(float *dst, const float *src, int N, int C, int H,
                                           int W)
{
    const size_t t = (size_t)blockIdx.x * kThreads + threadIdx.x;
    const size_t count = (size_t)N * C * (H * kUp) * (W * kUp);
    if (t >= count)
        return;
    const size_t ow = t % (size_t)(W * kUp);
    const size_t oh = t / (size_t)(W * kUp) % (size_t)(H * kUp);
    const size_t c = t / ((size_t)(W * kUp) * (H * kUp)) % (size_t)C;
    const size_t n = t / ((size_t)(W * kUp) * (H * kUp) * C);
    const size_t ch = c * kUp * kUp + (oh % kUp) * kUp + ow % kUp;
    dst[t] = *(src + source_at(n, ch, oh / kUp, ow / kUp, C, H, W));
}
