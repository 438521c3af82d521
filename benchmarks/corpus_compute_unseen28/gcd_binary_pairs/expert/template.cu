// gcd of uint32 pairs by Stein's binary algorithm, with the subtraction rounds it took.
// Expert parameterization (hand-written): THREADS a block, ITEMS pairs a thread (THREADS
// apart: coalesced), CTZ = 1 strips factors of two in one shift by __ffs (the count of
// trailing zeros) instead of a loop a bit, SELECT = 1 orders the pair by selects (min and
// u ^ v ^ min) instead of a branch and swap, MINB blocks an SM named to the register
// allocator. Every form walks the same (u, v) sequence: the same gcd and the same rounds.
// Launch: grid = (ceil(n / (THREADS ITEMS))), block = (THREADS).
// Defaults: the kernel as written (256 threads, one pair a thread, loops and a branch).

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef CTZ
#define CTZ 0
#endif
#ifndef SELECT
#define SELECT 0
#endif
#ifndef MINB
#define MINB 1
#endif

__device__ __forceinline__ unsigned stein_gcd(unsigned u, unsigned v, int *rounds)
{
    *rounds = 0;
    if (u == 0)
        return v;
    if (v == 0)
        return u;
#if CTZ
    const int shift = __ffs(u | v) - 1; // the common factors of two
    u >>= shift;
    v >>= shift;
    u >>= __ffs(u) - 1;
#else
    int shift = 0;
    while (((u | v) & 1u) == 0) {
        u >>= 1;
        v >>= 1;
        ++shift;
    }
    while ((u & 1u) == 0)
        u >>= 1;
#endif
    int count = 0;
    do { // u odd, v not zero
#if CTZ
        v >>= __ffs(v) - 1;
#else
        while ((v & 1u) == 0)
            v >>= 1;
#endif
#if SELECT
        const unsigned lo = u < v ? u : v;
        v = (u ^ v ^ lo) - lo;
        u = lo;
#else
        if (u > v) {
            const unsigned t = u;
            u = v;
            v = t;
        }
        v -= u;
#endif
        ++count;
    } while (v != 0);
    *rounds = count;
    return u << shift;
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
gcd_binary_pairs(unsigned *__restrict__ g, int *__restrict__ rounds,
                 const unsigned *__restrict__ a, const unsigned *__restrict__ b, int n)
{
    const int base = blockIdx.x * (THREADS * ITEMS) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int i = base + k * THREADS;
        if (i < n) {
            int r;
            g[i] = stein_gcd(a[i], b[i], &r);
            rounds[i] = r;
        }
    }
}
