// Session 35 respelling of the grid-stride partial-sum family (corpus_compute_unseen27/
// mse_i16_partials): per-block partial sums of absolute differences of two 8-bit images
// (a motion search's cost; the host adds the partials). A constexpr block width, a size_t
// grid-stride loop, __restrict__ bytes, an unsigned accumulator (exact: any order), the
// shared-memory halving tree with `s /= 2`; thread 0 writes the block's sum.
// Launch: grid = (min((n + 255) / 256, 1024)), block = (256).

constexpr int kThreads = 256;

extern "C" __global__ void sad_partials(unsigned *__restrict__ partial,
                                        const unsigned char *__restrict__ a,
                                        const unsigned char *__restrict__ b, size_t n)
{
    __shared__ unsigned sh[kThreads];
    const int tid = threadIdx.x;
    unsigned sum = 0u;
    for (size_t i = (size_t)blockIdx.x * kThreads + tid; i < n;
         i += (size_t)gridDim.x * kThreads) {
        const int d = (int)a[i] - (int)b[i];
        sum += (unsigned)(d < 0 ? -d : d);
    }
    sh[tid] = sum;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
        if (tid < s)
            sh[tid] += sh[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        partial[blockIdx.x] = sh[0];
}
