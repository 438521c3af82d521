// Symmetric int8 quantisation of half rows: scale[row] = amax / 127 (1 for a zero row), q =
// x * (127 / amax) rounded to nearest even, clamped to [-127, 127].
// Expert parameterization (hand-written): LANES lanes a row (8 or 16: several rows a warp,
// the butterfly within each group), WARPS warps a block; VEC halves a load (2, 4 or 8: one
// 4-, 8- or 16-byte load, and VEC codes one store) when cols % VEC == 0, else one half at a
// time; REGS groups of VEC halves a lane kept in registers from the first pass (raw, as
// 16-bit pairs) when the row fits (cols <= REGS * VEC * LANES), so the row is read once;
// otherwise (and REGS = 0) the second pass reads it again. No early return: a group past
// the rows runs empty loops, so every lane of a warp reaches the shuffles.
// Launch: grid = ceil(rows / (WARPS * 32 / LANES)), block = (WARPS * 32).
// Defaults: the kernel as written (a warp a row, four a block, one half a load, read twice).

#include <cuda_fp16.h>

#ifndef LANES
#define LANES 32
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef REGS
#define REGS 0
#endif

#define ROWS_PER_BLOCK (WARPS * 32 / LANES)

// V halves at p as 32-bit words (V = 1: the half in the low 16 bits)
template <int V>
static __device__ __forceinline__ void load_words(unsigned *w, const __half *p)
{
    if constexpr (V == 1) {
        w[0] = *reinterpret_cast<const unsigned short *>(p);
    } else if constexpr (V == 2) {
        w[0] = *reinterpret_cast<const unsigned *>(p);
    } else if constexpr (V == 4) {
        const float2 r = *reinterpret_cast<const float2 *>(p);
        w[0] = __float_as_uint(r.x);
        w[1] = __float_as_uint(r.y);
    } else {
        const float4 r = *reinterpret_cast<const float4 *>(p);
        w[0] = __float_as_uint(r.x);
        w[1] = __float_as_uint(r.y);
        w[2] = __float_as_uint(r.z);
        w[3] = __float_as_uint(r.w);
    }
}

// half k of the words
static __device__ __forceinline__ float half_at(const unsigned *w, int k)
{
    return __half2float(__ushort_as_half((unsigned short)((w[k / 2] >> (16 * (k % 2))) & 0xffffu)));
}

// the V codes of words w at dst (V bytes, one store)
template <int V>
static __device__ __forceinline__ void quantize_store(signed char *dst, const unsigned *w,
                                                      float inv)
{
    unsigned lo = 0u, hi = 0u;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        const int v = max(-127, min(127, __float2int_rn(half_at(w, k) * inv)));
        if (k < 4)
            lo |= ((unsigned)v & 0xffu) << (8 * k);
        else
            hi |= ((unsigned)v & 0xffu) << (8 * (k - 4));
    }
    if constexpr (V == 1)
        *dst = (signed char)lo;
    else if constexpr (V == 2)
        *reinterpret_cast<unsigned short *>(dst) = (unsigned short)lo;
    else if constexpr (V == 4)
        *reinterpret_cast<unsigned *>(dst) = lo;
    else
        *reinterpret_cast<unsigned long long *>(dst) = ((unsigned long long)hi << 32) | lo;
}

// one row (cols = 0 for a group past the rows: empty loops, the shuffles still reached)
template <int V>
static __device__ __forceinline__ void quant_row(signed char *dst, float *scale_out,
                                                 const __half *src, int cols, int lane)
{
    constexpr int W = V > 1 ? V / 2 : 1; // words a group
    const int groups = cols / V;
    float amax = 0.0f;
#if REGS > 0
    unsigned keep[REGS][W];
    const bool in_regs = groups <= REGS * LANES;
#else
    const bool in_regs = false;
#endif
    if (in_regs) {
#if REGS > 0
#pragma unroll
        for (int j = 0; j < REGS; ++j) {
            const int g = lane + j * LANES;
            if (g < groups) {
                load_words<V>(keep[j], src + (size_t)g * V);
#pragma unroll
                for (int k = 0; k < V; ++k)
                    amax = fmaxf(amax, fabsf(half_at(keep[j], k)));
            }
        }
#endif
    } else {
        for (int g = lane; g < groups; g += LANES) {
            unsigned w[W];
            load_words<V>(w, src + (size_t)g * V);
#pragma unroll
            for (int k = 0; k < V; ++k)
                amax = fmaxf(amax, fabsf(half_at(w, k)));
        }
    }
#pragma unroll
    for (int m = LANES / 2; m > 0; m >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));

    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    if (lane == 0 && cols > 0)
        *scale_out = amax > 0.0f ? amax / 127.0f : 1.0f;

    if (in_regs) {
#if REGS > 0
#pragma unroll
        for (int j = 0; j < REGS; ++j) {
            const int g = lane + j * LANES;
            if (g < groups)
                quantize_store<V>(dst + (size_t)g * V, keep[j], inv);
        }
#endif
    } else {
        for (int g = lane; g < groups; g += LANES) {
            unsigned w[W];
            load_words<V>(w, src + (size_t)g * V);
            quantize_store<V>(dst + (size_t)g * V, w, inv);
        }
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
rowquant_h16_s8(signed char *__restrict__ q, float *__restrict__ scale,
                const __half *__restrict__ x, int rows, int cols)
{
    const int lane = threadIdx.x % LANES;
    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / LANES;
    const bool live = row < rows;
    const size_t at = (size_t)(live ? row : 0) * cols;
    const int n = live ? cols : 0;
    if (VEC > 1 && cols % VEC == 0)
        quant_row<VEC>(q + at, scale + (live ? row : 0), x + at, n, lane);
    else
        quant_row<1>(q + at, scale + (live ? row : 0), x + at, n, lane);
}
