// silu_and_mul baseline: SGLang's act-and-mul design (FlashInfer's kernel), written afresh.
//   out[t, j] = T(silu(x[t, j])) * x[t, d + j],   silu(z) = z / (1 + exp(-z)) in fp32
// Launch: one block per token; block = min(d / VEC, 1024) threads (VEC = 16 / sizeof(T)).
// Each thread strides over 16-byte vectors of the gate and up halves, then a scalar tail
// covers d % VEC elements (the up half is only 16-byte aligned when d % VEC == 0, which
// SGLang requires of the caller).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR_T  // standalone compile at the default dtype
#define SCALAR_T __nv_bfloat16
#define ELEM_BYTES 2
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kVec = 16 / ELEM_BYTES;  // elements per 16-byte vector

struct alignas(16) Vec16 {
  scalar_t v[kVec];
};

__device__ __forceinline__ scalar_t silu_mul(scalar_t gate, scalar_t up) {
  const float g = static_cast<float>(gate);
  // SiLU in fp32, rounded to the element type before the multiply (SGLang's order).
  const scalar_t act = static_cast<scalar_t>(g / (1.0f + expf(-g)));
  return static_cast<scalar_t>(static_cast<float>(act) * static_cast<float>(up));
}

}  // namespace

extern "C" __global__ void silu_and_mul_kernel(scalar_t* __restrict__ out,
                                               const scalar_t* __restrict__ input,
                                               int tokens, int d) {
  (void)tokens;  // grid.x == tokens
  const long long token = blockIdx.x;
  const scalar_t* gate_row = input + token * 2LL * d;
  const scalar_t* up_row = gate_row + d;
  scalar_t* out_row = out + token * static_cast<long long>(d);

  const int num_vecs = d / kVec;
  for (int i = threadIdx.x; i < num_vecs; i += blockDim.x) {
    const Vec16 g = reinterpret_cast<const Vec16*>(gate_row)[i];
    const Vec16 u = reinterpret_cast<const Vec16*>(up_row)[i];
    Vec16 o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) o.v[k] = silu_mul(g.v[k], u.v[k]);
    reinterpret_cast<Vec16*>(out_row)[i] = o;
  }
  for (int j = num_vecs * kVec + threadIdx.x; j < d; j += blockDim.x) {
    out_row[j] = silu_mul(gate_row[j], up_row[j]);
  }
}
