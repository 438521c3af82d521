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
// CLUSTER > 1 (sm_90 thread-block clusters; needs ROWS_PER_BLOCK = 1 and ROW_IN_REGS = 1)
// splits one row over the CLUSTER CTAs of a cluster, so a few long rows use CLUSTER times
// as many SMs: grid = tokens * CLUSTER, CTA rank r of cluster c holds vectors
// [r * S, min((r + 1) * S, vectors)) of row c in registers, S = ceil(vectors / CLUSTER).
// Each CTA writes its sum of squares to its shared memory, a cluster barrier publishes it,
// every warp reads the CLUSTER partials through distributed shared memory (mapa +
// ld.shared::cluster) in the same order, so every CTA computes the same total. A CTA
// arrives at a second cluster barrier once it has read them and waits on it only before
// it exits, so no CTA's shared memory goes away while another still reads it. The release
// half of each cluster barrier compiles to a GPU-scope fence (MEMBAR.ALL.GPU), which waits
// for every store in flight; so a cluster CTA stores its residual slice after the second
// arrive, with the output, instead of in the first pass. The cluster size is compiled in
// (__cluster_dims__), so a plain cuLaunchKernel launches it.
// CLUSTER = 1 preprocesses all of this away: the kernel is the one without the knob.
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
#ifndef CACHE_HINT
#define CACHE_HINT 0  // 1: the rows' loads and stores stream (ld/st.global.cs, evict first)
#endif
#ifndef HIDDEN_CONST
#define HIDDEN_CONST 0  // 0: hidden at run time; else compiled in (== hidden)
#endif
#ifndef CLUSTER
#define CLUSTER 1  // CTAs (of one sm_90 thread-block cluster) that share one row
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kVec = VEC_BYTES / ELEM_BYTES;  // elements per vector
static_assert(kVec >= 1 && kVec * ELEM_BYTES == VEC_BYTES, "VEC_BYTES must hold whole elements");
constexpr int kPartials = 32;  // floats of per-warp partial sums per row slot
static_assert(HIDDEN_CONST % kVec == 0, "HIDDEN_CONST must hold whole vectors");
static_assert(CLUSTER >= 1 && CLUSTER <= 8 && (CLUSTER & (CLUSTER - 1)) == 0,
              "CLUSTER must be 1, 2, 4 or 8 (a power of two up to the portable size)");
static_assert(CLUSTER == 1 || (ROWS_PER_BLOCK == 1 && ROW_IN_REGS),
              "CLUSTER > 1 needs ROWS_PER_BLOCK = 1 and ROW_IN_REGS = 1");
// With hidden compiled in, the block size kernel.toml launches is known here too:
// min(BLOCK_THREADS, ROWS_PER_BLOCK * 32 * ceil(slice / 32)), split evenly over the rows,
// where a CTA's slice is ceil(vectors / CLUSTER) vectors (the whole row when CLUSTER = 1).
constexpr int kConstVecs = HIDDEN_CONST / kVec;
constexpr int kConstSliceVecs = (kConstVecs + CLUSTER - 1) / CLUSTER;
constexpr int kConstThreadsPerRow =
    (BLOCK_THREADS / ROWS_PER_BLOCK) < 32 * ((kConstSliceVecs + 31) / 32)
        ? BLOCK_THREADS / ROWS_PER_BLOCK
        : 32 * ((kConstSliceVecs + 31) / 32);

struct alignas(VEC_BYTES) Pack {
  scalar_t v[kVec];
};

// The rows are read once and written once: CACHE_HINT 1 marks those accesses streaming
// (evict first), so they do not displace what the L2 holds and, when the L2 is full of dirty
// lines (Triton's do_bench zeroes 256 MB before each repetition), are first to go. The
// weight vector, shared by every row, keeps the default policy.
#if CACHE_HINT
template <int B> struct RawPack;
template <> struct RawPack<4> { typedef unsigned int type; };
template <> struct RawPack<8> { typedef uint2 type; };
template <> struct RawPack<16> { typedef uint4 type; };
typedef RawPack<VEC_BYTES>::type Raw;
static_assert(sizeof(Raw) == sizeof(Pack), "a pack is one raw vector");
#endif

__device__ __forceinline__ Pack load_row(const Pack* p) {
#if CACHE_HINT
  union { Raw r; Pack v; } u;
  u.r = __ldcs(reinterpret_cast<const Raw*>(p));
  return u.v;
#else
  return *p;
#endif
}

__device__ __forceinline__ void store_row(Pack* p, const Pack& v) {
#if CACHE_HINT
  union { Raw r; Pack v; } u;
  u.v = v;
  __stcs(reinterpret_cast<Raw*>(p), u.r);
#else
  *p = v;
#endif
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

#if CLUSTER > 1
// This CTA's rank in its cluster (== blockIdx.x % CLUSTER for a (CLUSTER, 1, 1) cluster).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// Every thread of every CTA of the cluster: arrive (release: this CTA's shared-memory
// writes become visible to the cluster), then wait (acquire) for all of them.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The float at the same shared-memory offset as `local`, in the CTA of cluster rank `rank`.
__device__ __forceinline__ float load_from_rank(const float* local, unsigned rank) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  float value;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(remote) : "memory");
  return value;
}
#endif

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

// What __cluster_dims__(CLUSTER, 1, 1) expands to, spelled so that the signature stays one
// line of plain CUDA; empty (no cluster, the kernel as it was) when CLUSTER = 1.
#if CLUSTER > 1
#define WB_CLUSTER_DIMS cluster_dims(CLUSTER, 1, 1)
#else
#define WB_CLUSTER_DIMS
#endif

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) __attribute__((WB_CLUSTER_DIMS))
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
#if CLUSTER > 1
  constexpr int slot = 0;  // one row per CTA: no division by the block size
  const int tid = threadIdx.x;
#else
  const int slot = threadIdx.x / threads_per_row;           // row slot within the block
  const int tid = threadIdx.x - slot * threads_per_row;
#endif
  const int lane = threadIdx.x & 31;
  const int warps_per_row = threads_per_row >> 5;
  float* partials = smem + slot * kPartials;

#if CLUSTER > 1
  // One row per cluster; this CTA holds vectors [first_vec, end_vec) of it. The grid is
  // exactly tokens * CLUSTER, and a CTA with nothing to hold still joins both cluster
  // barriers (an empty slice adds 0).
  const unsigned rank = cluster_rank();
  const long long row = static_cast<long long>(blockIdx.x / CLUSTER);
#if HIDDEN_CONST > 0
  constexpr int num_vecs = kConstVecs;
  constexpr int slice_vecs = kConstSliceVecs;
#else
  const int num_vecs = hidden / kVec;
  const int slice_vecs = (num_vecs + CLUSTER - 1) / CLUSTER;
#endif
  const int first_vec = static_cast<int>(rank) * slice_vecs;
  const int end_vec = row < tokens ? min(first_vec + slice_vecs, num_vecs) : 0;
  const auto has_vec = [end_vec](int i) { return i < end_vec; };
  const int first = first_vec + tid;  // this thread's first vector of the row
#else
  const long long row = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK + slot;
  // Rows past the end still join the barrier below, with no work.
#if HIDDEN_CONST > 0
  const bool row_valid = ROWS_PER_BLOCK == 1 || row < tokens;  // one row per block: always
  const auto has_vec = [row_valid](int i) { return row_valid && i < kConstVecs; };
#else
  const int num_vecs = row < tokens ? hidden / kVec : 0;
  const auto has_vec = [num_vecs](int i) { return i < num_vecs; };
#endif
  const int first = tid;  // this thread's first vector of the row
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
    const int i = first + j * threads_per_row;
    if (has_vec(i)) {
      w[j] = w_vecs[i];
      const Pack a = load_row(reinterpret_cast<const Pack*>(in_row) + i);
      Pack b = load_row(reinterpret_cast<const Pack*>(res_row) + i);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        x[j][k] = static_cast<float>(a.v[k]) + static_cast<float>(b.v[k]);
        sum_sq += x[j][k] * x[j][k];
        b.v[k] = static_cast<scalar_t>(x[j][k]);
      }
#if CLUSTER == 1  // with a cluster, stored after the cluster barriers' fences (below)
      store_row(reinterpret_cast<Pack*>(res_row) + i, b);
#endif
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
        a[j] = load_row(reinterpret_cast<const Pack*>(in_row) + i);
        b[j] = load_row(reinterpret_cast<const Pack*>(res_row) + i);
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
        store_row(reinterpret_cast<Pack*>(res_row) + i, b[j]);
        store_floats(row_sum + i * kVec, x);
      }
    }
  }
#endif

  sum_sq = warp_sum(sum_sq);
  if (lane == 0) partials[tid >> 5] = sum_sq;
  __syncthreads();
#if CLUSTER > 1
  // The CTA's sum (every warp computes the same one), published to the cluster.
  __shared__ float cta_sum;
  const float cta_total = warp_sum(lane < warps_per_row ? partials[lane] : 0.f);
  if (threadIdx.x == 0) cta_sum = cta_total;
  cluster_arrive();
  cluster_wait();
  // Lane r reads rank r's sum; lanes 0..CLUSTER-1 add them in a butterfly and lane 0's
  // total goes to the warp: the same order in every warp of every CTA.
  float ranks_sum = lane < CLUSTER ? load_from_rank(&cta_sum, lane) : 0.f;
#pragma unroll
  for (int offset = CLUSTER / 2; offset > 0; offset >>= 1)
    ranks_sum += __shfl_xor_sync(0xffffffffu, ranks_sum, offset);
  const float total = __shfl_sync(0xffffffffu, ranks_sum, 0);
  cluster_arrive();  // done reading the others' shared memory; waited on before exit
#else
  const float total = warp_sum(lane < warps_per_row ? partials[lane] : 0.f);
#endif
  const float rms_rcp = rsqrtf(total * inv_hidden + eps);

#if ROW_IN_REGS
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const int i = first + j * threads_per_row;
    if (has_vec(i)) {
#if CLUSTER > 1
      Pack r;
#pragma unroll
      for (int k = 0; k < kVec; ++k) r.v[k] = static_cast<scalar_t>(x[j][k]);
      store_row(reinterpret_cast<Pack*>(res_row) + i, r);
#endif
      Pack o;
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        o.v[k] = static_cast<scalar_t>(x[j][k] * rms_rcp * static_cast<float>(w[j].v[k]));
      store_row(reinterpret_cast<Pack*>(in_row) + i, o);
    }
  }
#if CLUSTER > 1
  cluster_wait();  // every CTA of the cluster has read this CTA's cta_sum
#endif
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
        store_row(reinterpret_cast<Pack*>(in_row) + i, o);
      }
    }
  }
#endif
}
#undef WB_IN_ROW
#undef WB_CLUSTER_DIMS
