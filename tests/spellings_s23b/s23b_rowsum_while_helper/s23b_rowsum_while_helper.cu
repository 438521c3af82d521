// out[r] = sum(x[r, :]): one warp a row, eight rows a block of 256; the warp's place in the
// grid is its row, the fold a template helper halving its offset in a while loop.
// Launch: grid = (rows + 7) / 8, block = 256.
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  int offset = 16;
  while (offset) {
    v += __shfl_down_sync(0xffffffffu, v, offset);
    offset >>= 1;
  }
  return v;
}

extern "C" __global__ void s23b_rowsum_while_helper(float* out, const float* x, int rows,
                                                    int cols) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const float* xr = x + (size_t)warp * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += xr[c];
  s = warp_sum(s);
  if (lane == 0) out[warp] = s;
}
