// Rotary position embedding on half heads, respelled: only the head's width named
// (HEAD_DIM), the pair count written HEAD_DIM / 2 where it is used, unsigned indices, the
// token read through a local and a half2 loaded by a dereference.
// Launch: grid = (heads, tokens), block = (64).

#include <cuda_fp16.h>

#define HEAD_DIM 128

extern "C" __global__ void rope_rotate_f16(__half* out, const __half* x, const int* pos,
                                           const float* cos_tab, const float* sin_tab,
                                           int heads, int tokens) {
  const unsigned t = blockIdx.y;
  if (t >= (unsigned)tokens) return;
  const unsigned lane = threadIdx.x;
  const unsigned at = (t * (unsigned)heads + blockIdx.x) * (HEAD_DIM / 2) + lane;
  const int where = pos[t];
  const float c = cos_tab[where * (HEAD_DIM / 2) + lane];
  const float s = sin_tab[where * (HEAD_DIM / 2) + lane];
  const __half2 v = *(reinterpret_cast<const __half2*>(x) + at);
  const float lo = __low2float(v), hi = __high2float(v);
  *(reinterpret_cast<__half2*>(out) + at) = __floats2half2_rn(lo * c - hi * s, lo * s + hi * c);
}
