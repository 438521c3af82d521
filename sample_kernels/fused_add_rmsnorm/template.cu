// fused_add_rmsnorm template. Per row of [tokens, hidden], in place:
//   x = float(input) + float(residual);  residual <- T(x);
//   input <- T(x * rsqrt(mean(x^2) + eps) * float(weight))
//
// A block owns ROWS_PER_BLOCK rows; each row gets blockDim.x / ROWS_PER_BLOCK threads (a
// multiple of 32). The fp32 row x lives either in shared memory (ROW_IN_REGS = 0, like the
// baseline) or in registers (ROW_IN_REGS = 1: one pass over global memory, no shared row;
// needs hidden <= threads_per_row * VEC * ITEMS, a constraint). ITEMS vectors per thread are
// loaded before any is used. The sum of squares is reduced by warp shuffles, then every
// warp of the row shuffles the per-warp partials (one __syncthreads).
// Block size is min(BLOCK_THREADS, ROWS_PER_BLOCK * 32 * ceil(hidden / VEC / 32)) (see
// kernel.toml), so the defaults launch the baseline's thread count with its smem row.
// Dynamic shared memory: ROWS_PER_BLOCK * (32 + (ROW_IN_REGS ? 0 : hidden)) floats.
// HIDDEN_CONST > 0 compiles hidden in (a constraint makes it equal the shape's), as SGLang's
// JIT kernel is compiled per hidden size: the threads per row, the vectors per row and
// 1 / hidden become constants, so the per-vector bounds checks fold away where the threads
// cover the row exactly. The mean of squares is a multiply by 1 / hidden in both cases.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR_T  // standalone compile at the defaults
#define SCALAR_T __nv_bfloat16
#define ELEM_BYTES 2
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 1024  // upper bound on threads per block (launch bounds)
#endif
#ifndef VEC_BYTES
#define VEC_BYTES 16  // bytes per vector load/store: 4, 8 or 16
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 1
#endif
#ifndef ROW_IN_REGS
#define ROW_IN_REGS 0
#endif
#ifndef ITEMS
#define ITEMS 1  // vectors in flight per thread (the whole row share when ROW_IN_REGS)
#endif
#ifndef HIDDEN_CONST
#define HIDDEN_CONST 0  // 0: hidden at run time; else compiled in (== hidden)
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kVec = VEC_BYTES / ELEM_BYTES;  // elements per vector
static_assert(kVec >= 1 && kVec * ELEM_BYTES == VEC_BYTES, "VEC_BYTES must hold whole elements");
constexpr int kPartials = 32;  // floats of per-warp partial sums per row slot
static_assert(HIDDEN_CONST % kVec == 0, "HIDDEN_CONST must hold whole vectors");
// With hidden compiled in, the block size kernel.toml launches is known here too:
// min(BLOCK_THREADS, ROWS_PER_BLOCK * 32 * ceil(vectors / 32)), split evenly over the rows.
constexpr int kConstVecs = HIDDEN_CONST / kVec;
constexpr int kConstThreadsPerRow =
    (BLOCK_THREADS / ROWS_PER_BLOCK) < 32 * ((kConstVecs + 31) / 32)
        ? BLOCK_THREADS / ROWS_PER_BLOCK
        : 32 * ((kConstVecs + 31) / 32);

struct alignas(VEC_BYTES) Pack {
  scalar_t v[kVec];
};

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

#if !ROW_IN_REGS
// kVec consecutive floats at a (kVec * 4)-byte aligned address, as wide as possible.
__device__ __forceinline__ void store_floats(float* dst, const float (&x)[kVec]) {
  if constexpr (kVec % 4 == 0) {
#pragma unroll
    for (int k = 0; k < kVec; k += 4)
      *reinterpret_cast<float4*>(dst + k) = make_float4(x[k], x[k + 1], x[k + 2], x[k + 3]);
  } else if constexpr (kVec % 2 == 0) {
#pragma unroll
    for (int k = 0; k < kVec; k += 2) *reinterpret_cast<float2*>(dst + k) = make_float2(x[k], x[k + 1]);
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) dst[k] = x[k];
  }
}

__device__ __forceinline__ void load_floats(float (&x)[kVec], const float* src) {
  if constexpr (kVec % 4 == 0) {
#pragma unroll
    for (int k = 0; k < kVec; k += 4) {
      const float4 f = *reinterpret_cast<const float4*>(src + k);
      x[k] = f.x; x[k + 1] = f.y; x[k + 2] = f.z; x[k + 3] = f.w;
    }
  } else if constexpr (kVec % 2 == 0) {
#pragma unroll
    for (int k = 0; k < kVec; k += 2) {
      const float2 f = *reinterpret_cast<const float2*>(src + k);
      x[k] = f.x; x[k + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kVec; ++k) x[k] = src[k];
  }
}
#endif

}  // namespace

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
    fused_add_rmsnorm_kernel(scalar_t* __restrict__ input, scalar_t* __restrict__ residual,
                             const scalar_t* __restrict__ weight, int tokens, int hidden,
                             float eps) {
  extern __shared__ float smem[];
#if HIDDEN_CONST > 0
  constexpr int threads_per_row = kConstThreadsPerRow;
  constexpr float inv_hidden = 1.f / static_cast<float>(HIDDEN_CONST);
  hidden = HIDDEN_CONST;  // the row pointers below use the constant
#else
  const int threads_per_row = blockDim.x / ROWS_PER_BLOCK;  // multiple of 32
  const float inv_hidden = __fdividef(1.f, static_cast<float>(hidden));
#endif
  const int slot = threadIdx.x / threads_per_row;           // row slot within the block
  const int tid = threadIdx.x - slot * threads_per_row;
  const int lane = threadIdx.x & 31;
  const int warps_per_row = threads_per_row >> 5;
  float* partials = smem + slot * kPartials;

  const long long row = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK + slot;
  // Rows past the end still join the barrier below, with no work.
#if HIDDEN_CONST > 0
  const bool row_valid = ROWS_PER_BLOCK == 1 || row < tokens;  // one row per block: always
  const auto has_vec = [row_valid](int i) { return row_valid && i < kConstVecs; };
#else
  const int num_vecs = row < tokens ? hidden / kVec : 0;
  const auto has_vec = [num_vecs](int i) { return i < num_vecs; };
#endif
  scalar_t* in_row = input + row * hidden;
  scalar_t* res_row = residual + row * hidden;
  const Pack* w_vecs = reinterpret_cast<const Pack*>(weight);
  float sum_sq = 0.f;

#if ROW_IN_REGS
  float x[ITEMS][kVec];
  Pack w[ITEMS];  // fetched before the reduction so its latency hides behind the barrier
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = tid + j * threads_per_row;
    if (has_vec(i)) {
      w[j] = w_vecs[i];
      const Pack a = reinterpret_cast<const Pack*>(in_row)[i];
      Pack b = reinterpret_cast<const Pack*>(res_row)[i];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        x[j][k] = static_cast<float>(a.v[k]) + static_cast<float>(b.v[k]);
        sum_sq += x[j][k] * x[j][k];
        b.v[k] = static_cast<scalar_t>(x[j][k]);
      }
      reinterpret_cast<Pack*>(res_row)[i] = b;
    }
  }
#else
  float* row_sum = smem + ROWS_PER_BLOCK * kPartials + static_cast<long long>(slot) * hidden;
  for (int base = tid; has_vec(base); base += threads_per_row * ITEMS) {
    Pack a[ITEMS], b[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = base + j * threads_per_row;
      if (has_vec(i)) {
        a[j] = reinterpret_cast<const Pack*>(in_row)[i];
        b[j] = reinterpret_cast<const Pack*>(res_row)[i];
      }
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = base + j * threads_per_row;
      if (has_vec(i)) {
        float x[kVec];
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          x[k] = static_cast<float>(a[j].v[k]) + static_cast<float>(b[j].v[k]);
          sum_sq += x[k] * x[k];
          b[j].v[k] = static_cast<scalar_t>(x[k]);
        }
        reinterpret_cast<Pack*>(res_row)[i] = b[j];
        store_floats(row_sum + i * kVec, x);
      }
    }
  }
#endif

  sum_sq = warp_sum(sum_sq);
  if (lane == 0) partials[tid >> 5] = sum_sq;
  __syncthreads();
  const float total = warp_sum(lane < warps_per_row ? partials[lane] : 0.f);
  const float rms_rcp = rsqrtf(total * inv_hidden + eps);

#if ROW_IN_REGS
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = tid + j * threads_per_row;
    if (has_vec(i)) {
      Pack o;
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        o.v[k] = static_cast<scalar_t>(x[j][k] * rms_rcp * static_cast<float>(w[j].v[k]));
      reinterpret_cast<Pack*>(in_row)[i] = o;
    }
  }
#else
  for (int base = tid; has_vec(base); base += threads_per_row * ITEMS) {
    Pack w[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = base + j * threads_per_row;
      if (has_vec(i)) w[j] = w_vecs[i];
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = base + j * threads_per_row;
      if (has_vec(i)) {
        float x[kVec];
        load_floats(x, row_sum + i * kVec);
        Pack o;
#pragma unroll
        for (int k = 0; k < kVec; ++k)
          o.v[k] = static_cast<scalar_t>(x[k] * rms_rcp * static_cast<float>(w[j].v[k]));
        reinterpret_cast<Pack*>(in_row)[i] = o;
      }
    }
  }
#endif
}
#undef WB_IN_ROW
