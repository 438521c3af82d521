// merge_attn_states_lse template. Per (token, head) row, LSE layout [tokens, heads]:
//   m = max(s_a, s_b); w_a = exp(s_a - m); w_b = exp(s_b - m)      (+inf LSE -> -inf)
//   out = v_a * w_a / (w_a + w_b) + v_b * w_b / (w_a + w_b);  out_lse = m + log(w_a + w_b)
//
// Three work decompositions:
//   flattened (THREADS_PER_ROW 0, ROWS_PER_BLOCK 0), like the baseline: each thread owns
//         ITEMS packs of the flattened (row, pack) index space (strided by the block size
//         for coalescing), finds its row by a division and recomputes the row's weights
//         for every pack; grid-stride loop over the packs;
//   row groups (THREADS_PER_ROW 1..32): a group of lanes owns whole rows (grid-stride over
//         rows); the group's first lane loads the two LSEs once per row and broadcasts them
//         by shuffle; lanes stride over the row's packs, ITEMS packs in flight;
//   2-D (ROWS_PER_BLOCK > 0): block = (packs_per_row, ROWS_PER_BLOCK) threads, one pack of
//         ITEMS rows per thread (rows ROWS_PER_BLOCK apart), no loop and no division: the
//         pack is threadIdx.x and the row comes from blockIdx.x and threadIdx.y. With
//         ROWS_PER_BLOCK = heads this is FlashInfer's launch (one block per token).
// A pack is VEC_BYTES bytes (head_dim % (VEC_BYTES / sizeof(T)) == 0 is a constraint).
// The defaults (128 threads, 16-byte packs, flattened, ITEMS 1, expf) launch exactly like
// the baseline. Index math is 32-bit unsigned, like the baseline.
// HEAD_DIM_CONST > 0 compiles head_dim in (a constraint makes it equal the shape's), so the
// per-pack row index becomes a division by a constant (a shift or a multiply) instead of a
// run-time division; one cubin per head_dim, as FlashInfer dispatches its merge kernel.
// FAST_EXP 1 computes the weights with one SFU exponential instead of two accurate ones:
// the larger LSE's weight is exactly 1, so with e = exp(-|s_a - s_b|) the scales are
// 1 / (1 + e) and e / (1 + e) (one approximate reciprocal) and out_lse = max + log(1 + e).
// LEAN 1 (2-D blocks with FAST_EXP 1; constraint) trims the per-thread instructions of that
// path: every item's loads are issued unconditionally (a row past the end reads the last
// row; only the stores are guarded), so no branch sits between a load and its use; the
// exponential and logarithm are the bare flush-to-zero SFU instructions (no range fix-up for
// a weight below 2^-126, which is then 0); bf16 words widen to floats by a shift and a mask;
// the store reuses the load's offset. Same arithmetic as FAST_EXP 1 otherwise.
// PDL 1: launched with programmatic dependent launch (kernel.toml's `pdl`), like FlashInfer's
// multi-state merge kernels (MergeStates; its two-state MergeState launches plainly): each
// block waits for the previous kernel on the stream (griddepcontrol.wait) before its first
// global read and lets the next kernel launch when it is done
// (griddepcontrol.launch_dependents), so back to back (a CUDA graph, a model's stream) the
// next launch overlaps this one's tail. PDL 2 (LEAN configs): the same, but each block lets
// the next kernel launch right after its wait: the dependent's blocks are scheduled while
// this kernel runs and sit at their own griddepcontrol.wait, which returns only once this
// grid has completed and its writes are visible (PTX ISA), so the results are the same and
// the whole launch latency can hide behind this kernel. PDL 0: the plain kernel (the lines
// preprocess away).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef SCALAR_T  // standalone compile at the defaults
#define SCALAR_T __nv_bfloat16
#define ELEM_BYTES 2
#endif
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 128
#endif
#ifndef VEC_BYTES
#define VEC_BYTES 16  // bytes per pack: 4, 8 or 16
#endif
#ifndef THREADS_PER_ROW
#define THREADS_PER_ROW 0  // 0: flattened; else lanes per (token, head) row (power of 2 <= 32)
#endif
#ifndef ITEMS
#define ITEMS 1  // packs in flight per thread
#endif
#ifndef FAST_EXP
#define FAST_EXP 0  // 1: one __expf, __logf and an approximate reciprocal; 0: expf / logf / div
#endif
#ifndef HEAD_DIM_CONST
#define HEAD_DIM_CONST 0  // 0: head_dim at run time; else compiled in (== head_dim)
#endif
#ifndef ROWS_PER_BLOCK
#define ROWS_PER_BLOCK 0  // 0: 1-D blocks of BLOCK_THREADS; else 2-D (packs_per_row, this)
#endif
#ifndef LEAN
#define LEAN 0  // 1: the lean 2-D path (see above); 0: as before
#endif
#ifndef PDL
#define PDL 0  // 1: programmatic dependent launch (sm_90+), 2: releasing early, 0: plain launch
#endif
#if PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WB_PDL 1
#else
#define WB_PDL 0
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kVec = VEC_BYTES / ELEM_BYTES;  // elements per pack
static_assert(kVec >= 1 && kVec * ELEM_BYTES == VEC_BYTES, "VEC_BYTES must hold whole elements");
static_assert(THREADS_PER_ROW == 0 || (THREADS_PER_ROW <= 32 &&
                                       (THREADS_PER_ROW & (THREADS_PER_ROW - 1)) == 0),
              "THREADS_PER_ROW must be 0 or a power of two up to a warp");
static_assert(THREADS_PER_ROW <= BLOCK_THREADS, "a row group must fit in a block");
static_assert(ROWS_PER_BLOCK == 0 || THREADS_PER_ROW == 0,
              "2-D blocks and row groups are different layouts");
static_assert(!LEAN || (ROWS_PER_BLOCK > 0 && FAST_EXP == 1),
              "LEAN is a variant of the 2-D path with FAST_EXP 1");
constexpr int kMaxBlock = ROWS_PER_BLOCK > 0 ? 1024 : BLOCK_THREADS;

struct alignas(VEC_BYTES) Pack {
  scalar_t v[kVec];
};

struct Weights {
  float scale_a, scale_b, lse;
};

__device__ __forceinline__ Weights merge_weights(float la, float lb) {
  la = isinf(la) ? -INFINITY : la;  // +inf marks an empty segment
  lb = isinf(lb) ? -INFINITY : lb;
  const float m = fmaxf(la, lb);
#if FAST_EXP
  // Both -inf gives NaN here as in the accurate path (and the reference).
  const float e = __expf(fminf(la, lb) - m);  // in [0, 1]: the smaller side's weight
  const float sum = 1.f + e;
  const float inv = __fdividef(1.f, sum);
  const float small = e * inv;
  return la >= lb ? Weights{inv, small, __logf(sum) + m} : Weights{small, inv, __logf(sum) + m};
#else
  const float wa = expf(la - m);
  const float wb = expf(lb - m);
  const float sum = wa + wb;
  return {wa / sum, wb / sum, logf(sum) + m};
#endif
}

__device__ __forceinline__ Pack merge_pack(const Pack& a, const Pack& b, const Weights& w) {
  Pack o;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    o.v[k] = static_cast<scalar_t>(static_cast<float>(a.v[k]) * w.scale_a +
                                   static_cast<float>(b.v[k]) * w.scale_b);
  }
  return o;
}

#if LEAN
// ex2.approx.ftz / lg2.approx.ftz: the SFU instructions alone. __expf and __logf add a
// range fix-up for results below 2^-126 (a compare and two multiplies); here such a weight
// is flushed to 0, which no bf16/fp16/fp32 output can tell from 2^-126.
__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float lg2_ftz(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ Weights lean_weights(float la, float lb) {
  la = isinf(la) ? -INFINITY : la;  // +inf marks an empty segment
  lb = isinf(lb) ? -INFINITY : lb;
  const float m = fmaxf(la, lb);
  const float e = ex2_ftz((fminf(la, lb) - m) * 1.44269504088896341f);  // log2(e)
  const float sum = 1.f + e;
  const float inv = __fdividef(1.f, sum);
  const float small = e * inv;
  const float lse = fmaf(lg2_ftz(sum), 0.693147180559945309f, m);  // ln(2)
  return la >= lb ? Weights{inv, small, lse} : Weights{small, inv, lse};
}

// Any element type: as merge_pack.
template <typename T>
__device__ __forceinline__ Pack lean_merge_pack(const Pack& a, const Pack& b, const Weights& w,
                                                T) {
  return merge_pack(a, b, w);
}

#if ELEM_BYTES == 2  // (an fp32 build has no bf16 packs; this overload would not compile)
// bf16: a bf16 is the upper half of a float, so each 32-bit word widens to two floats by a
// shift and a mask (nvcc's per-element conversion moves the upper half down and back up).
__device__ __forceinline__ Pack lean_merge_pack(const Pack& a, const Pack& b, const Weights& w,
                                                __nv_bfloat16) {
  static_assert(kVec % 2 == 0, "bf16 packs hold whole 32-bit words");
  const unsigned* wa = reinterpret_cast<const unsigned*>(a.v);
  const unsigned* wb = reinterpret_cast<const unsigned*>(b.v);
  Pack o;
  __nv_bfloat162* wo = reinterpret_cast<__nv_bfloat162*>(o.v);
#pragma unroll
  for (int k = 0; k < kVec / 2; ++k) {
    const float lo = __uint_as_float(wa[k] << 16) * w.scale_a +
                     __uint_as_float(wb[k] << 16) * w.scale_b;
    const float hi = __uint_as_float(wa[k] & 0xffff0000u) * w.scale_a +
                     __uint_as_float(wb[k] & 0xffff0000u) * w.scale_b;
    wo[k] = __floats2bfloat162_rn(lo, hi);
  }
  return o;
}
#endif  // ELEM_BYTES == 2
#endif  // LEAN

// Where item j of a thread lives: whether it exists, its row, its element offset, and
// whether this thread writes the row's merged LSE.
template <typename Offset>
struct Site {
  bool valid;
  unsigned row;
  Offset off;
  bool writes_lse;
};

// The flattened and 2-D layouts share this body: load all ITEMS (LSEs and packs) first so
// the loads are in flight together, then merge and store. ``site(j)`` says where item j is.
template <typename SiteOf>
__device__ __forceinline__ void merge_items(SiteOf site, scalar_t* __restrict__ out,
                                            float* __restrict__ out_lse,
                                            const scalar_t* __restrict__ v_a,
                                            const float* __restrict__ s_a,
                                            const scalar_t* __restrict__ v_b,
                                            const float* __restrict__ s_b) {
  Pack a[ITEMS], b[ITEMS];
  float la[ITEMS], lb[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const auto at = site(j);
    if (at.valid) {
      la[j] = s_a[at.row];
      lb[j] = s_b[at.row];
      a[j] = *reinterpret_cast<const Pack*>(v_a + at.off);
      b[j] = *reinterpret_cast<const Pack*>(v_b + at.off);
    }
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const auto at = site(j);
    if (at.valid) {
      const Weights w = merge_weights(la[j], lb[j]);
      *reinterpret_cast<Pack*>(out + at.off) = merge_pack(a[j], b[j], w);
      if (at.writes_lse) out_lse[at.row] = w.lse;
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kMaxBlock) merge_attn_states_lse_kernel(
    scalar_t* __restrict__ out, float* __restrict__ out_lse, const scalar_t* __restrict__ v_a,
    const float* __restrict__ s_a, const scalar_t* __restrict__ v_b,
    const float* __restrict__ s_b, int tokens, int heads, int head_dim) {
  const unsigned packs_per_row =
      (HEAD_DIM_CONST > 0 ? static_cast<unsigned>(HEAD_DIM_CONST) : static_cast<unsigned>(head_dim)) /
      kVec;
  const unsigned rows = static_cast<unsigned>(tokens) * heads;
#if WB_PDL
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the previous kernel's writes are visible
#if PDL == 2
  asm volatile("griddepcontrol.launch_dependents;");  // the next kernel may launch now
#endif
#endif

#if ROWS_PER_BLOCK > 0 && LEAN
  // Every item's loads are issued unconditionally (rows past the end read the last row) so
  // no branch separates the loads from their use; only the stores are guarded.
  const unsigned row_len = HEAD_DIM_CONST > 0 ? static_cast<unsigned>(HEAD_DIM_CONST)
                                              : static_cast<unsigned>(head_dim);
  const unsigned pack = threadIdx.x;
  const unsigned first = blockIdx.x * (ROWS_PER_BLOCK * ITEMS) + threadIdx.y;
  Pack a[ITEMS], b[ITEMS];
  float la[ITEMS], lb[ITEMS];
  unsigned off[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned row = min(first + j * ROWS_PER_BLOCK, rows - 1);
    off[j] = row * row_len + pack * kVec;
    la[j] = s_a[row];
    lb[j] = s_b[row];
    a[j] = *reinterpret_cast<const Pack*>(v_a + off[j]);
    b[j] = *reinterpret_cast<const Pack*>(v_b + off[j]);
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned row = first + j * ROWS_PER_BLOCK;
    if (row < rows) {  // then the load above read this row (it was not clamped)
      const Weights w = lean_weights(la[j], lb[j]);
      *reinterpret_cast<Pack*>(out + off[j]) = lean_merge_pack(a[j], b[j], w, scalar_t());
      if (pack == 0) out_lse[row] = w.lse;
    }
  }
  (void)packs_per_row;
#elif ROWS_PER_BLOCK > 0
  const unsigned row_len = HEAD_DIM_CONST > 0 ? static_cast<unsigned>(HEAD_DIM_CONST)
                                              : static_cast<unsigned>(head_dim);
  const unsigned pack = threadIdx.x;  // blockDim.x == packs_per_row (kernel.toml)
  const unsigned first = blockIdx.x * (ROWS_PER_BLOCK * ITEMS) + threadIdx.y;
  merge_items(
      [&](int j) {
        const unsigned row = first + j * ROWS_PER_BLOCK;
        return Site<unsigned>{row < rows, row, row * row_len + pack * kVec, pack == 0};
      },
      out, out_lse, v_a, s_a, v_b, s_b);
  (void)packs_per_row;
#elif THREADS_PER_ROW == 0
  constexpr unsigned block_threads = BLOCK_THREADS;
  const unsigned total = rows * packs_per_row;
  const unsigned tile = block_threads * ITEMS;  // packs per block per iteration
  for (unsigned base = blockIdx.x * tile + threadIdx.x; base - threadIdx.x < total;
       base += gridDim.x * tile) {
    merge_items(
        [&](int j) {
          const unsigned idx = base + j * block_threads;
          const unsigned row = idx / packs_per_row;
          return Site<unsigned long long>{idx < total, row,
                                          static_cast<unsigned long long>(idx) * kVec,
                                          idx == row * packs_per_row};
        },
        out, out_lse, v_a, s_a, v_b, s_b);
  }
#else
  constexpr unsigned kGroups = BLOCK_THREADS / THREADS_PER_ROW;  // rows per block iteration
  const unsigned group = threadIdx.x / THREADS_PER_ROW;
  const unsigned lane = threadIdx.x % THREADS_PER_ROW;
  // The loop bound is uniform across the block, so whole warps reach the shuffles.
  for (unsigned first = blockIdx.x * kGroups; first < rows; first += gridDim.x * kGroups) {
    const unsigned row = first + group;
    const bool valid = row < rows;
    float la = 0.f, lb = 0.f;
    if (valid && lane == 0) {
      la = s_a[row];
      lb = s_b[row];
    }
#if THREADS_PER_ROW > 1
    la = __shfl_sync(0xffffffffu, la, 0, THREADS_PER_ROW);
    lb = __shfl_sync(0xffffffffu, lb, 0, THREADS_PER_ROW);
#endif
    if (!valid) continue;
    const Weights w = merge_weights(la, lb);
    if (lane == 0) out_lse[row] = w.lse;
    const unsigned long long row_off = static_cast<unsigned long long>(row) * head_dim;
    for (unsigned p0 = lane; p0 < packs_per_row; p0 += THREADS_PER_ROW * ITEMS) {
      Pack a[ITEMS], b[ITEMS];
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const unsigned p = p0 + j * THREADS_PER_ROW;
        if (p < packs_per_row) {
          a[j] = *reinterpret_cast<const Pack*>(v_a + row_off + p * kVec);
          b[j] = *reinterpret_cast<const Pack*>(v_b + row_off + p * kVec);
        }
      }
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        const unsigned p = p0 + j * THREADS_PER_ROW;
        if (p < packs_per_row)
          *reinterpret_cast<Pack*>(out + row_off + p * kVec) = merge_pack(a[j], b[j], w);
      }
    }
  }
#endif
#if WB_PDL && PDL == 1
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
