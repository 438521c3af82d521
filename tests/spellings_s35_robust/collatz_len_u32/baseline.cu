// Session 35 respelling of the per-element compute family (planck_band_frac's shape in
// integers): steps[i] = the number of Collatz steps (n -> n / 2 or 3 n + 1, in 64 bits) from
// seeds[i] down to 1, capped at kCap (a seed of 0 gives -1). A constexpr cap, a size_t index
// from blockDim.x, __ldg reads through const __restrict__ pointers, a __forceinline__
// helper with a while loop and a two-way branch, an early return past n.
// Launch: grid = ((n + 255) / 256), block = (256).

constexpr int kCap = 1000;

__device__ __forceinline__ int collatz_steps(unsigned long long v)
{
    int steps = 0;
    while (v != 1ull && steps < kCap) {
        if (v & 1ull)
            v = 3ull * v + 1ull;
        else
            v >>= 1;
        ++steps;
    }
    return steps;
}

extern "C" __global__ void collatz_len(int *__restrict__ steps,
                                       const unsigned *__restrict__ seeds, size_t n)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    const unsigned s = __ldg(&seeds[t]);
    steps[t] = s == 0u ? -1 : collatz_steps((unsigned long long)s);
}
