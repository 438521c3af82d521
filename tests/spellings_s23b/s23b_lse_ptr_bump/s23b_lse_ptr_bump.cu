// out[r] = log(sum(exp(x[r, :]))): one warp a row, four rows a block; each lane keeps an
// online (max, sum) walking a pointer bumped by 32 to the row's end, the lanes merge theirs.
// Launch: grid = (rows + 3) / 4, block = 128.
extern "C" __global__ void s23b_lse_ptr_bump(float* out, const float* x, int rows, int cols) {
  const int row = blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* p = x + (size_t)row * cols + lane;
  const float* end = x + (size_t)row * cols + cols;
  float m = -INFINITY, s = 0.0f;
  for (; p < end; p += 32) {
    const float v = *p;
    if (v > m) { s = s * expf(m - v) + 1.0f; m = v; }
    else s += expf(v - m);
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o);
    const float os = __shfl_xor_sync(0xffffffffu, s, o);
    const float nm = fmaxf(m, om);
    s = (m == -INFINITY ? 0.0f : s * expf(m - nm)) + (om == -INFINITY ? 0.0f : os * expf(om - nm));
    m = nm;
  }
  if (lane == 0) out[row] = m + logf(s);
}
