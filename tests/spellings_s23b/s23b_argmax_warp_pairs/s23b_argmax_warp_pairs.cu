// idx[r] = the first c with x[r, c] = max(x[r, :]): one warp a row (threadIdx.y the row in
// the block), the (value, index) pair folded by xor shuffles, ties to the lower index.
// Launch: grid = (rows + 3) / 4, block = (32, 4).
extern "C" __global__ void s23b_argmax_warp_pairs(int* idx, const float* x, int rows,
                                                  int cols) {
  const int row = blockIdx.x * 4 + threadIdx.y;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float best = -INFINITY;
  int at = 0x7fffffff;
  for (int c = threadIdx.x; c < cols; c += 32) {
    const float v = __ldg(xr + c);
    if (v > best) { best = v; at = c; }
  }
  for (int m = 16; m > 0; m >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, m);
    const int oi = __shfl_xor_sync(0xffffffffu, at, m);
    if (ov > best || (ov == best && oi < at)) { best = ov; at = oi; }
  }
  if (threadIdx.x == 0) idx[row] = at;
}
