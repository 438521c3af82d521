// y[r, c] = sum(x[r, :c + 1]): one block of 128 a row, the row in chunks of 128; each warp
// scans by up shuffles, warp totals go through shared memory, a carry runs across chunks.
// Launch: grid = rows, block = 128.
extern "C" __global__ void s23b_rowscan_warp_chunks(float* y, const float* x, int rows,
                                                    int cols) {
  __shared__ float totals[4];
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float carry = 0.0f;
  int base = 0;
  while (base < cols) {
    const int c = base + threadIdx.x;
    float v = c < cols ? xr[c] : 0.0f;
    for (int d = 1; d < 32; d <<= 1) {
      const float u = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) v += u;
    }
    if (lane == 31) totals[wid] = v;
    __syncthreads();
    float before = carry;
    for (int w = 0; w < wid; ++w) before += totals[w];
    if (c < cols) yr[c] = v + before;
    carry += totals[0] + totals[1] + totals[2] + totals[3];
    __syncthreads();
    base += 128;
  }
}
