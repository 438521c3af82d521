// Row softmax of x [rows, cols] (float), numerically stable (max subtracted).
// Launch: grid = rows, block = 256.
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
#ifndef MIN_BLOCKS_PER_SM
#define MIN_BLOCKS_PER_SM 0
#endif
template <typename T, int N>
struct alignas(sizeof(T) * N) WbVec {  // N elements moved as one aligned access
  T v[N];
};
#if MIN_BLOCKS_PER_SM > 0
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM)
#elif (BLOCK_THREADS) > 256
#define WB_BLOCK_BOUNDS __launch_bounds__(BLOCK_THREADS)
#else
#define WB_BLOCK_BOUNDS  // no bounds, as written
#endif
extern "C" __global__ WB_BLOCK_BOUNDS void softmax(float* __restrict__ y, const float* __restrict__ x, int cols) {
  __shared__ float red[BLOCK_THREADS];
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;

  float m = -INFINITY;
  for (int wb_c0 = (threadIdx.x) * VEC; wb_c0 < cols; wb_c0 += (BLOCK_THREADS) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_xr[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * (BLOCK_THREADS) * VEC;
      if (c < cols) {
        wb_xr[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&xr[c]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * (BLOCK_THREADS) * VEC;
      if (c < cols) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) m = fmaxf(m, wb_xr[wb_i].v[wb_v]);
      }
    }
  }
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = (BLOCK_THREADS / 2); s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();

  float sum = 0.0f;
  for (int wb_c0 = (threadIdx.x) * VEC; wb_c0 < cols; wb_c0 += (BLOCK_THREADS) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_xr[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * (BLOCK_THREADS) * VEC;
      if (c < cols) {
        wb_xr[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&xr[c]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * (BLOCK_THREADS) * VEC;
      if (c < cols) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) sum += __expf(wb_xr[wb_i].v[wb_v] - m);
      }
    }
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = (BLOCK_THREADS / 2); s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.0f / red[0];

  for (int wb_c0 = (threadIdx.x) * VEC; wb_c0 < cols; wb_c0 += (BLOCK_THREADS) * (VEC * ITEMS_PER_THREAD)) {
    WbVec<float, VEC> wb_yr[ITEMS_PER_THREAD];
    WbVec<float, VEC> wb_xr[ITEMS_PER_THREAD];
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * (BLOCK_THREADS) * VEC;
      if (c < cols) {
        wb_xr[wb_i] = *reinterpret_cast<const WbVec<float, VEC>*>(&xr[c]);
      }
    }
#pragma unroll
  for (int wb_i = 0; wb_i < ITEMS_PER_THREAD; ++wb_i) {
      const int c = wb_c0 + wb_i * (BLOCK_THREADS) * VEC;
      if (c < cols) {
#pragma unroll
        for (int wb_v = 0; wb_v < VEC; ++wb_v) wb_yr[wb_i].v[wb_v] = __expf(wb_xr[wb_i].v[wb_v] - m) * inv;
        *reinterpret_cast<WbVec<float, VEC>*>(&yr[c]) = wb_yr[wb_i];
      }
    }
  }
}
