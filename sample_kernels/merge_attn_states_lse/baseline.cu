// merge_attn_states_lse baseline: SGLang's merge_state_v2 design, written afresh.
// Per (token, head) row with LSE layout [tokens, heads] (natural log):
//   m = max(s_a, s_b); w_a = exp(s_a - m); w_b = exp(s_b - m)      (+inf LSE -> -inf)
//   out = v_a * w_a / (w_a + w_b) + v_b * w_b / (w_a + w_b);  out_lse = m + log(w_a + w_b)
// Launch: 1-D grid of 128-thread blocks, one thread per 16-byte pack of a row (PACK =
// 16 / sizeof(T) elements); every thread reloads both LSEs and recomputes the weights; the
// pack-0 thread writes out_lse. Requires head_dim % PACK == 0. Index math is 32-bit
// unsigned like SGLang's (tokens * heads * head_dim / PACK < 2^32).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR_T  // standalone compile at the default dtype
#define SCALAR_T __nv_bfloat16
#define ELEM_BYTES 2
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kPack = 16 / ELEM_BYTES;  // elements per 16-byte pack

struct alignas(16) Pack16 {
  scalar_t v[kPack];
};

}  // namespace

extern "C" __global__ void merge_attn_states_lse_kernel(
    scalar_t* __restrict__ out, float* __restrict__ out_lse, const scalar_t* __restrict__ v_a,
    const float* __restrict__ s_a, const scalar_t* __restrict__ v_b,
    const float* __restrict__ s_b, int tokens, int heads, int head_dim) {
  const unsigned packs_per_row = static_cast<unsigned>(head_dim) / kPack;
  const unsigned total = static_cast<unsigned>(tokens) * heads * packs_per_row;
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  if (gid >= total) return;
  const unsigned row = gid / packs_per_row;  // token * heads + head: the LSE index
  const unsigned pack = gid - row * packs_per_row;

  float la = s_a[row];
  float lb = s_b[row];
  la = isinf(la) ? -INFINITY : la;  // +inf marks an empty segment
  lb = isinf(lb) ? -INFINITY : lb;
  const float m = fmaxf(la, lb);
  const float wa = expf(la - m);
  const float wb = expf(lb - m);
  const float sum = wa + wb;
  const float scale_a = wa / sum;
  const float scale_b = wb / sum;

  const unsigned long long off = static_cast<unsigned long long>(row) * head_dim + pack * kPack;
  const Pack16 a = *reinterpret_cast<const Pack16*>(v_a + off);
  const Pack16 b = *reinterpret_cast<const Pack16*>(v_b + off);
  Pack16 o;
#pragma unroll
  for (int k = 0; k < kPack; ++k) {
    o.v[k] = static_cast<scalar_t>(static_cast<float>(a.v[k]) * scale_a +
                                   static_cast<float>(b.v[k]) * scale_b);
  }
  *reinterpret_cast<Pack16*>(out + off) = o;
  if (pack == 0) out_lse[row] = logf(sum) + m;
}
