// Deliberately broken variants of silu_and_mul (same signature as the sample kernel), one per
// MODE, for proving that the workbench classifies each failure and carries on:
//   0 correct   1 out-of-bounds write   2 infinite loop   3 wrong result
//   4 NaN output   5 compile error   6 leaves part of the output unwritten
//   7 writes one row past the end of its output (a neighbouring allocation, no crash)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR_T
#define SCALAR_T __nv_bfloat16
#define ELEM_BYTES 2
#define MODE 0
#endif

typedef SCALAR_T scalar_t;

#if MODE == 5
#error "MODE 5 is a deliberate compile error"
#endif

extern "C" __global__ void silu_and_mul_kernel(scalar_t* __restrict__ out,
                                               const scalar_t* __restrict__ input,
                                               int tokens, int d) {
  const long long token = blockIdx.x;
  const scalar_t* gate_row = input + token * 2LL * d;
  const scalar_t* up_row = gate_row + d;
  scalar_t* out_row = out + token * static_cast<long long>(d);
#if MODE == 2
  // an asm volatile body is a side effect, so the compiler cannot drop the endless loop
  for (;;) { asm volatile("nanosleep.u32 1000;"); }
#endif
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    const float g = static_cast<float>(gate_row[j]);
    const scalar_t act = static_cast<scalar_t>(g / (1.0f + expf(-g)));
    float r = static_cast<float>(act) * static_cast<float>(up_row[j]);
#if MODE == 3
    r = r * 1.5f + 0.25f;
#elif MODE == 4
    if (j % 97 == 3) r = __int_as_float(0x7fc00000);  // canonical NaN
#endif
#if MODE == 6
    if (j % 2 == 1) continue;
#endif
    out_row[j] = static_cast<scalar_t>(r);
  }
#if MODE == 7
  // the row after the last: the right values, but in memory the kernel does not own
  if (token == tokens - 1)
    for (int j = threadIdx.x; j < d; j += blockDim.x) out_row[d + j] = out_row[j];
#endif
#if MODE == 1
  // far past the end of the output allocation
  if (threadIdx.x == 0) out[(long long)tokens * d + (1LL << 34) + token] = out_row[0];
#endif
}
