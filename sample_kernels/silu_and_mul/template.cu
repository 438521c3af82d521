// silu_and_mul template: out[t, j] = T(silu(x[t, j])) * x[t, d + j] (SiLU in fp32, rounded
// to T before the multiply, like the baseline).
//
// Work decomposition: grid = (ceil(tokens / TOKENS_PER_BLOCK), ROW_SPLIT). A block owns
// TOKENS_PER_BLOCK consecutive tokens and one of ROW_SPLIT contiguous column chunks of
// their rows; its threads stride over the flattened (token, vector) pairs of that tile.
//   - ROW_SPLIT > 1 spreads a few long rows (decode batches) over more SMs;
//   - TOKENS_PER_BLOCK > 1 packs short rows into one block;
//   - UNROLL vectors are loaded before any is used, for memory-level parallelism;
//   - PDL 1: launched with programmatic dependent launch (kernel.toml's `pdl`), like
//     FlashInfer's kernels: each block waits for the previous kernel on the stream
//     (griddepcontrol.wait) before it reads and lets the next kernel launch when it is done
//     (griddepcontrol.launch_dependents), so back to back (a CUDA graph, a model's stream)
//     the next launch overlaps this one's tail. PDL 0: the plain kernel.
//   - D_CONST > 0 (the shape's d compiled in, as FlashInfer and SGLang build per size): the
//     full-tile mode. The tile's shape and the block size are then constants, so each
//     thread owns a compile-time number of vectors at compile-time offsets, issues all
//     their loads before any is used (the whole tile in flight, kept packed), and needs no
//     loop, no division and, where the threads cover the tile exactly, no bounds check;
//     UNROLL is unused (a constraint keeps it 1).
//   - FAST_EXP 2: __expf and an approximate division (__fdividef), what fast-math builds
//     (FlashInfer's JIT, Triton) do; 1: __expf with an IEEE division; 0: expf, IEEE.
//   - LOAD_PATH: the input's load instruction. 0: the read-only path the const __restrict__
//     input gets (ld.global.nc); 1-4 plain loads with a cache operator (.ca, .cg, .cs, .lu;
//     kernel.toml offers 4, last use, with the full tile: measured on the H100 at 1536 x 4864
//     with an L2 full of dirty lines, 17.6 us against 18.2 us for the read-only path).
// Block size is min(BLOCK_THREADS, work items of a tile) (see kernel.toml), so the defaults
// (1024 threads, 16-byte vectors, 1 token, no split) launch exactly like the baseline.
// Requires d % VEC == 0 (constraint): the up half then stays VEC_BYTES-aligned.
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
#ifndef TOKENS_PER_BLOCK
#define TOKENS_PER_BLOCK 1
#endif
#ifndef ROW_SPLIT
#define ROW_SPLIT 1  // column chunks (blocks) per row
#endif
#ifndef UNROLL
#define UNROLL 1  // vectors in flight per thread
#endif
#ifndef FAST_EXP
#define FAST_EXP 0  // 2: __expf and __fdividef, 1: __expf (SFU, ~2 ulp), 0: expf
#endif
#ifndef D_CONST
#define D_CONST 0  // 0: d at run time; else compiled in (== d): the full-tile mode
#endif
#ifndef PDL
#define PDL 0  // 1: programmatic dependent launch (sm_90+), 0: plain launch
#endif
#ifndef LOAD_PATH
#define LOAD_PATH 0  // 0: read-only path (ld.global.nc), 1: ld.global.ca, 2: .cg, 3: .cs, 4: .lu
#endif
#if PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WB_PDL 1
#else
#define WB_PDL 0
#endif

typedef SCALAR_T scalar_t;

namespace {

constexpr int kVec = VEC_BYTES / ELEM_BYTES;  // elements per vector
static_assert(kVec >= 1 && kVec * ELEM_BYTES == VEC_BYTES, "VEC_BYTES must hold whole elements");

struct alignas(VEC_BYTES) Pack {
  scalar_t v[kVec];
};

// One vector of the input. LOAD_PATH 0 lets the compiler take the read-only data path
// (the input is const __restrict__: LDG.E.*.CONSTANT, through the texture pipeline); the
// others are plain global loads with a cache operator: 1 the default (.ca, what Triton emits
// for Liger's kernel), 2 caches in L2 only (.cg), 3 streams (.cs: evict first), 4 last use
// (.lu).
#if LOAD_PATH == 0
#define WB_LOAD(base, index) (reinterpret_cast<const Pack*>(base)[index])
#else
#define WB_LOAD(base, index) load_pack(reinterpret_cast<const Pack*>(base) + (index))
__device__ __forceinline__ Pack load_pack(const Pack* p) {
#if LOAD_PATH == 1
#define WB_LD __ldca
#elif LOAD_PATH == 2
#define WB_LD __ldcg
#elif LOAD_PATH == 3
#define WB_LD __ldcs
#else
#define WB_LD __ldlu
#endif
#if VEC_BYTES == 16
  const int4 raw = WB_LD(reinterpret_cast<const int4*>(p));
#elif VEC_BYTES == 8
  const int2 raw = WB_LD(reinterpret_cast<const int2*>(p));
#else
  const int raw = WB_LD(reinterpret_cast<const int*>(p));
#endif
#undef WB_LD
  Pack out;
  static_assert(sizeof(raw) == sizeof(out), "one load per vector");
  memcpy(&out, &raw, sizeof(out));
  return out;
}
#endif

__device__ __forceinline__ scalar_t silu_mul(scalar_t gate, scalar_t up) {
  const float g = static_cast<float>(gate);
#if FAST_EXP
  const float e = __expf(-g);
#else
  const float e = expf(-g);
#endif
#if FAST_EXP == 2
  const scalar_t act = static_cast<scalar_t>(__fdividef(g, 1.0f + e));
#else
  const scalar_t act = static_cast<scalar_t>(g / (1.0f + e));
#endif
  return static_cast<scalar_t>(static_cast<float>(act) * static_cast<float>(up));
}

#if D_CONST > 0
static_assert(D_CONST % kVec == 0, "D_CONST must hold whole vectors");
// The tile and the launch kernel.toml computes, known at compile time.
constexpr int kNumVecs = D_CONST / kVec;                           // vectors per row half
constexpr int kChunk = (kNumVecs + ROW_SPLIT - 1) / ROW_SPLIT;     // vectors per block and row
constexpr int kTileVecs = TOKENS_PER_BLOCK * kChunk;
constexpr int kThreads = BLOCK_THREADS < kTileVecs ? BLOCK_THREADS : kTileVecs;
constexpr int kItems = (kTileVecs + kThreads - 1) / kThreads;      // vectors per thread
// Every thread's vectors exist in every block: no bounds check at all.
constexpr bool kCovered = kItems * kThreads == kTileVecs && kNumVecs % ROW_SPLIT == 0;
#endif

}  // namespace

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
    silu_and_mul_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ input,
                        int tokens, int d) {
#if D_CONST > 0
  const int tok_begin = static_cast<int>(blockIdx.x) * TOKENS_PER_BLOCK;
  const int col_begin = static_cast<int>(blockIdx.y) * kChunk;
#if WB_PDL
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  // Whole tokens of this block (only the grid's last block may have fewer) and vectors of
  // this block's chunk (only the last chunk of a row may be shorter).
  const int toks = TOKENS_PER_BLOCK == 1 ? 1 : min(TOKENS_PER_BLOCK, tokens - tok_begin);
  const int cols = kNumVecs % ROW_SPLIT == 0 ? kChunk : min(kChunk, kNumVecs - col_begin);
  // kCovered drops the per-vector check only where this block's tile is whole: with packed
  // tokens the grid's last block may hold fewer (a run-time fact).
  const bool whole = (TOKENS_PER_BLOCK == 1 || toks == TOKENS_PER_BLOCK) && cols == kChunk;
  Pack gate[kItems], up[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int item = static_cast<int>(threadIdx.x) + k * kThreads;
    const int t = item / kChunk;  // a constant divisor: a multiply and a shift
    const int col = item - t * kChunk;
    if (whole ? (kCovered || item < kTileVecs) : (t < toks && col < cols)) {
      const scalar_t* row = input + static_cast<long long>(tok_begin + t) * (2 * D_CONST);
      gate[k] = WB_LOAD(row, col_begin + col);
      up[k] = WB_LOAD(row + D_CONST, col_begin + col);
    }
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int item = static_cast<int>(threadIdx.x) + k * kThreads;
    const int t = item / kChunk;
    const int col = item - t * kChunk;
    if (whole ? (kCovered || item < kTileVecs) : (t < toks && col < cols)) {
      Pack o;
#pragma unroll
      for (int e = 0; e < kVec; ++e) o.v[e] = silu_mul(gate[k].v[e], up[k].v[e]);
      reinterpret_cast<Pack*>(out + static_cast<long long>(tok_begin + t) * D_CONST)[col_begin + col] = o;
    }
  }
#if WB_PDL
  asm volatile("griddepcontrol.launch_dependents;");
#endif
#else
  const int num_vecs = d / kVec;  // vectors per row half
  const int chunk = (num_vecs + ROW_SPLIT - 1) / ROW_SPLIT;
  const int col_begin = static_cast<int>(blockIdx.y) * chunk;
  const int cols = min(chunk, num_vecs - col_begin);
  const int tok_begin = static_cast<int>(blockIdx.x) * TOKENS_PER_BLOCK;
  const int toks = min(TOKENS_PER_BLOCK, tokens - tok_begin);
#if WB_PDL
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the previous kernel's writes are visible
#endif
  if (cols <= 0 || toks <= 0) return;

  const int work = toks * cols;  // (token, vector) pairs in this block's tile
  const int stride = blockDim.x;
  for (int base = threadIdx.x; base < work; base += stride * UNROLL) {
    Pack gate[UNROLL], up[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const int item = base + k * stride;
      if (item < work) {
        const int t = (TOKENS_PER_BLOCK == 1) ? 0 : item / cols;
        const int col = col_begin + (item - t * cols);
        const scalar_t* row = input + (tok_begin + t) * 2LL * d;
        gate[k] = WB_LOAD(row, col);
        up[k] = WB_LOAD(row + d, col);
      }
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
      const int item = base + k * stride;
      if (item < work) {
        // recomputed rather than kept from the load loop: fewer live registers
        const int t = (TOKENS_PER_BLOCK == 1) ? 0 : item / cols;
        const int col = col_begin + (item - t * cols);
        Pack o;
#pragma unroll
        for (int e = 0; e < kVec; ++e) o.v[e] = silu_mul(gate[k].v[e], up[k].v[e]);
        reinterpret_cast<Pack*>(out + (tok_begin + t) * static_cast<long long>(d))[col] = o;
      }
    }
  }
#if WB_PDL
  asm volatile("griddepcontrol.launch_dependents;");
#endif
#endif  // D_CONST
}
