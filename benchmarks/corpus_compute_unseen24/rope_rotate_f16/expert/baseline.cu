// Rotary position embedding on half-precision heads: x and out are [tokens, heads, 128]
// __half, each head vector 64 interleaved pairs (x[2i], x[2i + 1]); token t sits at
// position p = pos[t], and cos_tab / sin_tab are [max_pos, 64] float. For pair i:
//   out[2i]     = x[2i] * cos_tab[p][i] - x[2i + 1] * sin_tab[p][i]
//   out[2i + 1] = x[2i] * sin_tab[p][i] + x[2i + 1] * cos_tab[p][i]
// in float, rounded to half. One head a block (blockIdx.x the head, blockIdx.y the token),
// one pair a thread through __half2.
// Launch: grid = (heads, tokens), block = (64).

#include <cuda_fp16.h>

#define ROPE_DIM 128
#define ROPE_PAIRS (ROPE_DIM / 2)

extern "C" __global__ void rope_rotate_f16(__half *out, const __half *x, const int *pos,
                                           const float *cos_tab, const float *sin_tab,
                                           int heads, int tokens)
{
    const int tok = blockIdx.y;
    if (tok >= tokens)
        return;
    const int i = threadIdx.x;
    const size_t row = ((size_t)tok * heads + blockIdx.x) * ROPE_PAIRS;

    const int p = pos[tok];
    const float c = cos_tab[p * ROPE_PAIRS + i];
    const float s = sin_tab[p * ROPE_PAIRS + i];

    const __half2 v = reinterpret_cast<const __half2 *>(x)[row + i];
    const float x0 = __low2float(v), x1 = __high2float(v);
    reinterpret_cast<__half2 *>(out)[row + i] = __floats2half2_rn(x0 * c - x1 * s,
                                                                  x0 * s + x1 * c);
}
