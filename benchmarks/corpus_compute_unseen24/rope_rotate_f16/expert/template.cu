// Rotary position embedding on half heads: x, out [tokens, heads, 128], 64 interleaved
// pairs a head; token t at p = pos[t], cos_tab / sin_tab [max_pos, 64] float; pair i:
// out[2i] = x[2i] c - x[2i + 1] s, out[2i + 1] = x[2i] s + x[2i + 1] c (c, s the table
// entries at p, i), in float, rounded to half.
// Expert parameterization (hand-written): PPT consecutive pairs a thread, read and written
// as one __half2 (PPT = 1), 8-byte (2) or 16-byte (4) vector with the tables' entries as a
// float, float2 or float4 (rows of 64 floats and 256-byte head rows keep them aligned);
// 64 / PPT threads a head, HPB heads a block (threadIdx.y), TOK tokens a block in turn.
// Launch: grid = (ceil(heads / HPB), ceil(tokens / TOK)), block = (64 / PPT, HPB).
// Defaults: the kernel as written (one head a block, one pair a thread, one token).

#include <cuda_fp16.h>

#ifndef PPT
#define PPT 1
#endif
#ifndef HPB
#define HPB 1
#endif
#ifndef TOK
#define TOK 1
#endif

constexpr int kPairs = 64;
constexpr int kLanes = kPairs / PPT;

struct __align__(8) half2x2 { __half2 a, b; };
struct __align__(16) half2x4 { __half2 a, b, c, d; };

static __device__ __forceinline__ __half2 rotate(__half2 v, float c, float s)
{
    const float x0 = __low2float(v), x1 = __high2float(v);
    return __floats2half2_rn(x0 * c - x1 * s, x0 * s + x1 * c);
}

extern "C" __global__ void __launch_bounds__(kLanes * HPB)
rope_rotate_f16(__half *__restrict__ out, const __half *__restrict__ x,
                const int *__restrict__ pos, const float *__restrict__ cos_tab,
                const float *__restrict__ sin_tab, int heads, int tokens)
{
    const int head = blockIdx.x * HPB + threadIdx.y;
    if (head >= heads)
        return;
    const int i = threadIdx.x * PPT;
#pragma unroll
    for (int k = 0; k < TOK; ++k) {
        const int tok = blockIdx.y * TOK + k;
        if (tok >= tokens)
            return;
        const size_t row = ((size_t)tok * heads + head) * kPairs + i;
        const __half2 *src = reinterpret_cast<const __half2 *>(x) + row;
        __half2 *dst = reinterpret_cast<__half2 *>(out) + row;
        const float *cr = cos_tab + pos[tok] * kPairs + i;
        const float *sr = sin_tab + (cr - cos_tab);
#if PPT == 4
        const half2x4 v = *reinterpret_cast<const half2x4 *>(src);
        const float4 c = *reinterpret_cast<const float4 *>(cr);
        const float4 s = *reinterpret_cast<const float4 *>(sr);
        half2x4 r;
        r.a = rotate(v.a, c.x, s.x);
        r.b = rotate(v.b, c.y, s.y);
        r.c = rotate(v.c, c.z, s.z);
        r.d = rotate(v.d, c.w, s.w);
        *reinterpret_cast<half2x4 *>(dst) = r;
#elif PPT == 2
        const half2x2 v = *reinterpret_cast<const half2x2 *>(src);
        const float2 c = *reinterpret_cast<const float2 *>(cr);
        const float2 s = *reinterpret_cast<const float2 *>(sr);
        half2x2 r;
        r.a = rotate(v.a, c.x, s.x);
        r.b = rotate(v.b, c.y, s.y);
        *reinterpret_cast<half2x2 *>(dst) = r;
#else
        *dst = rotate(*src, *cr, *sr);
#endif
    }
}
