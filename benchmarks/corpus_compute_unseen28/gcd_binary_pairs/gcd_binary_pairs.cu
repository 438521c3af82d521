// Greatest common divisor of many pairs of 32-bit unsigned integers by Stein's binary
// algorithm (shifts and subtractions, no division), as a batch "are these coprime?" check
// would run it: g[i] = gcd(a[i], b[i]) (gcd(0, v) = v), rounds[i] = the subtraction rounds
// the algorithm took (0 when either input is 0). The work a pair takes depends on its
// values: while loops strip the common and the odd-making factors of two, a do-while runs
// until the difference reaches zero. A __device__ helper does one pair, reporting its round
// count through a pointer; the kernel returns early past n.
// Launch: grid = ((n + 255) / 256), block = (256).

__device__ unsigned stein_gcd(unsigned u, unsigned v, int *rounds)
{
    *rounds = 0;
    if (u == 0)
        return v;
    if (v == 0)
        return u;

    int shift = 0;
    while (((u | v) & 1u) == 0) { // the common factors of two
        u >>= 1;
        v >>= 1;
        ++shift;
    }
    while ((u & 1u) == 0)
        u >>= 1;

    int count = 0;
    do {
        while ((v & 1u) == 0)
            v >>= 1;
        if (u > v) { // keep u <= v
            const unsigned t = u;
            u = v;
            v = t;
        }
        v -= u;
        ++count;
    } while (v != 0);

    *rounds = count;
    return u << shift;
}

extern "C" __global__ void gcd_binary_pairs(unsigned *g, int *rounds, const unsigned *a,
                                            const unsigned *b, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int r;
    g[i] = stein_gcd(a[i], b[i], &r);
    rounds[i] = r;
}
