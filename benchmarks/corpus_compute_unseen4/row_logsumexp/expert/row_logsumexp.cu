// out[r] = log(sum over j of exp(x[r][j])) for each row r of x [rows, cols], computed
// without overflow: one warp per row; each lane keeps a running maximum m and a sum s of
// exp(x - m) rescaled whenever m grows (an online log-sum-exp), then the 32 lanes merge
// their (m, s) pairs with butterfly shuffles.
// Launch: grid = (rows + 7) / 8, block = 256 (8 warps, a row each).
namespace {
constexpr int kWarpsPerBlock = 8;
}

// (m, s) absorbs (om, os): both sums rescaled to the larger maximum.
__device__ __forceinline__ void lse_merge(float& m, float& s, float om, float os) {
  if (om > m) {
    s = s * expf(m - om) + os;
    m = om;
  } else if (os > 0.0f) {
    s += os * expf(om - m);
  }
}

extern "C" __global__ void row_logsumexp(float* out, const float* x, int rows, int cols) {
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
  if (r >= rows) return;  // the whole warp: r is the same for its 32 lanes
  const float* row = x + (size_t)r * cols;
  float m = -INFINITY, s = 0.0f;
  for (int j = lane; j < cols; j += 32) lse_merge(m, s, row[j], 1.0f);
  for (int offset = 16; offset >= 1; offset /= 2) {
    const float om = __shfl_xor_sync(0xffffffffu, m, offset);
    const float os = __shfl_xor_sync(0xffffffffu, s, offset);
    lse_merge(m, s, om, os);
  }
  if (lane == 0) out[r] = m + logf(s);
}
