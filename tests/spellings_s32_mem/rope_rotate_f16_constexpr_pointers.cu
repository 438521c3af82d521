// Rotary position embedding on half heads, respelled: a constexpr pair count, the token's
// work guarded by an if (no early return), pointers to the head's row and the table rows,
// the rotation in a helper.
// Launch: grid = (heads, tokens), block = (64).

#include <cuda_fp16.h>

constexpr int kHeadPairs = 64;

__device__ __forceinline__ __half2 rotate_pair(__half2 v, float c, float s) {
  const float a = __low2float(v);
  const float b = __high2float(v);
  return __floats2half2_rn(a * c - b * s, a * s + b * c);
}

extern "C" __global__ void rope_rotate_f16(__half* out, const __half* x, const int* pos,
                                           const float* cos_tab, const float* sin_tab,
                                           int heads, int tokens) {
  const int token = blockIdx.y;
  const int head = blockIdx.x;
  const int pair = threadIdx.x;
  if (token < tokens) {
    const size_t base = ((size_t)token * heads + head) * kHeadPairs;
    const __half2* src = reinterpret_cast<const __half2*>(x) + base;
    __half2* dst = reinterpret_cast<__half2*>(out) + base;
    const float* crow = cos_tab + pos[token] * kHeadPairs;
    const float* srow = sin_tab + pos[token] * kHeadPairs;
    dst[pair] = rotate_pair(src[pair], crow[pair], srow[pair]);
  }
}
