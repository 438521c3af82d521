// fused_add_rmsnorm baseline: SGLang's CUDA op (FlashInfer's FusedAddRMSNorm design),
// written afresh. Per row r of [tokens, hidden], in place:
//   x = float(input) + float(residual)             (fp32)
//   residual <- T(x)
//   input    <- T(x * rsqrt(mean(x^2) + eps) * float(weight))
// Launch: one block per row, block = (32, num_warps) with VEC = gcd(16 / sizeof(T), hidden)
// and num_warps = ceil(min(1024, hidden / VEC) / 32). SGLang picks VEC on the host; one
// cubin serves every shape here, so the kernel switches on the same gcd at run time.
// Dynamic shared memory: 32 floats of per-warp partial sums, then the fp32 summed row
// (hidden floats).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR_T  // standalone compile at the default dtype
#define SCALAR_T __nv_bfloat16
#define ELEM_BYTES 2
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kMaxVec = 16 / ELEM_BYTES;  // elements per 16-byte vector
constexpr int kPartials = 32;             // floats reserved for per-warp partial sums

template <int V>
struct alignas(V * ELEM_BYTES) VecT {
  scalar_t v[V];
};

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

template <int kVec>
__device__ __forceinline__ void add_rmsnorm_row(scalar_t* __restrict__ input,
                                                scalar_t* __restrict__ residual,
                                                const scalar_t* __restrict__ weight, int hidden,
                                                float eps, float* smem) {
  using Vec = VecT<kVec>;  // kVec * sizeof(T) bytes (16 when hidden allows)
  float* partials = smem;
  float* row_sum = smem + kPartials;  // fp32 copy of x, hidden floats (16-byte aligned)

  const int lane = threadIdx.x;  // blockDim.x == 32
  const int warp = threadIdx.y;
  const int num_warps = blockDim.y;
  const int tid = warp * 32 + lane;
  const int nthreads = num_warps * 32;
  const long long row = blockIdx.x;
  scalar_t* in_row = input + row * hidden;
  scalar_t* res_row = residual + row * hidden;
  const int num_vecs = hidden / kVec;

  // Pass 1: x = input + residual, store residual, keep x in shared memory, sum of squares.
  float sum_sq = 0.f;
  for (int i = tid; i < num_vecs; i += nthreads) {
    const Vec a = reinterpret_cast<const Vec*>(in_row)[i];
    Vec b = reinterpret_cast<const Vec*>(res_row)[i];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float x = static_cast<float>(a.v[k]) + static_cast<float>(b.v[k]);
      sum_sq += x * x;
      b.v[k] = static_cast<scalar_t>(x);
      row_sum[i * kVec + k] = x;
    }
    reinterpret_cast<Vec*>(res_row)[i] = b;
  }

  // Two-level reduction: shuffle within each warp, then one warp over the warp partials.
  sum_sq = warp_sum(sum_sq);
  if (lane == 0) partials[warp] = sum_sq;
  __syncthreads();
  if (warp == 0) {
    float p = lane < num_warps ? partials[lane] : 0.f;
    p = warp_sum(p);
    if (lane == 0) partials[0] = p;
  }
  __syncthreads();
  const float rms_rcp = rsqrtf(partials[0] / static_cast<float>(hidden) + eps);

  // Pass 2: normalise the fp32 row from shared memory and apply the weight.
  for (int i = tid; i < num_vecs; i += nthreads) {
    const Vec w = reinterpret_cast<const Vec*>(weight)[i];
    Vec o;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      o.v[k] = static_cast<scalar_t>(row_sum[i * kVec + k] * rms_rcp * static_cast<float>(w.v[k]));
    }
    reinterpret_cast<Vec*>(in_row)[i] = o;
  }
}

}  // namespace

extern "C" __global__ void fused_add_rmsnorm_kernel(scalar_t* __restrict__ input,
                                                    scalar_t* __restrict__ residual,
                                                    const scalar_t* __restrict__ weight,
                                                    int tokens, int hidden, float eps) {
  (void)tokens;  // grid.x == tokens
  extern __shared__ float smem[];
  int vec = kMaxVec;  // gcd(kMaxVec, hidden): kMaxVec is a power of two
  while (hidden % vec != 0) vec >>= 1;
  switch (vec) {
    case 8: add_rmsnorm_row<(kMaxVec >= 8 ? 8 : 1)>(input, residual, weight, hidden, eps, smem); break;
    case 4: add_rmsnorm_row<4>(input, residual, weight, hidden, eps, smem); break;
    case 2: add_rmsnorm_row<2>(input, residual, weight, hidden, eps, smem); break;
    default: add_rmsnorm_row<1>(input, residual, weight, hidden, eps, smem); break;
  }
}
