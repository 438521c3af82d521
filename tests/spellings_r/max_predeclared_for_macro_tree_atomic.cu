// *peak = max of x: each block's grid-stride maximum (`for (; i < n; i += stride)` with the
// index and the stride declared before it, the block size a macro), a shared tree from
// BS / 2 with max(), thread 0 adding its block's maximum by atomicMax
#define BS 128

extern "C" __global__ void k(int* peak, const int* x, int n) {
  __shared__ int tile[BS];
  int i = blockIdx.x * BS + threadIdx.x;
  const int stride = BS * gridDim.x;
  int m = -2147483647 - 1;
  for (; i < n; i += stride) m = max(m, x[i]);
  tile[threadIdx.x] = m;
  __syncthreads();
  for (int s = BS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) tile[threadIdx.x] = max(tile[threadIdx.x], tile[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicMax(peak, tile[0]);
}
