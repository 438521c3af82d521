// Sum of a float array into one scalar: block partial sums in shared memory, then one
// atomicAdd per block (result is accumulated into, so it is an in/out argument).
// Launch: grid = min((n + 255) / 256, 1024), block = 256 (grid-stride loop).
// Tuning parameters lifted by the Kernel Workbench offline templater;
// the defaults are the kernel as written.
#ifndef BLOCK_THREADS
#define BLOCK_THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS_PER_THREAD
#define ITEMS_PER_THREAD 1
#endif
#ifndef GRID_BLOCKS
#define GRID_BLOCKS 1024
#endif
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
template <typename T, int N>
struct alignas(sizeof(T) * N) WbVec {  // N elements moved as one aligned access
  T v[N];
};
static_assert(GRID_BLOCKS >= 1, "GRID_BLOCKS caps the grid (launch rule); the grid-stride loops cover any grid");
#if MIN_BLOCKS_PER_SM > 0
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM)
#elif (BLOCK_THREADS) > 256
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS)
#else
#define WB_BLOCK_BOUNDS  // no bounds, as written
#endif
extern "C" __global__ WB_BLOCK_BOUNDS void sum_reduce(float* result, const float* __restrict__ x, int n) {
  __shared__ float partial[BLOCK_THREADS];
  float s = 0.0f;
  for (int wb_i0 = (blockIdx.x * BLOCK_THREADS + threadIdx.x) * VEC; wb_i0 < n; wb_i0 += (BLOCK_THREADS * gridDim.x) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_x[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int i = wb_i0 + wb_i * (BLOCK_THREADS * gridDim.x) * VEC;
      if (i < n && (VEC == 1 || (n) - i >= VEC)) {
        wb_x[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&x[i]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int i = wb_i0 + wb_i * (BLOCK_THREADS * gridDim.x) * VEC;
      if (i < n && (VEC == 1 || (n) - i >= VEC)) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) s += wb_x[wb_i].v[wb_v];
      } else if (i < n) {  // the vector would cross n: one by one
        for (int wb_tail = i; wb_tail < n; ++wb_tail) {
          const int i = wb_tail;
          s += x[i];
        }
      }
    }
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = (BLOCK_THREADS / 2); k > 0; k >>= 1) {
    if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}
