// One AdamW optimizer step (decoupled weight decay, Loshchilov & Hutter), out of place:
//   m' = beta1 m + (1 - beta1) g,  v' = beta2 v + (1 - beta2) g^2,
//   p' = p - lr (m' / bc1 / (sqrt(v' / bc2) + eps) + wd p),
// bc1 = 1 - beta1^t and bc2 = 1 - beta2^t the bias corrections of step t, given.
// One element per thread, 256 threads per block.
// Launch: grid = ((n + 255) / 256), block = (256).

namespace {

constexpr int kBlock = 256;

struct AdamWParams {
  float lr, beta1, beta2, eps, wd, bc1, bc2;
};

template <typename T>
__device__ __forceinline__ T ema(T old, T sample, T beta) {
  return beta * old + (T(1) - beta) * sample;
}

template <typename T>
__device__ __forceinline__ T adamw_update(T p, T m, T v, const AdamWParams& hp) {
  const auto m_hat = m / hp.bc1;
  const auto v_hat = v / hp.bc2;
  return p - hp.lr * (m_hat / (sqrtf(v_hat) + hp.eps) + hp.wd * p);
}

}  // namespace

extern "C" __global__ void adamw_step(float* __restrict__ p_out, float* __restrict__ m_out,
                                      float* __restrict__ v_out, const float* __restrict__ p,
                                      const float* __restrict__ g, const float* __restrict__ m,
                                      const float* __restrict__ v, int n, float lr, float beta1,
                                      float beta2, float eps, float wd, float bc1, float bc2) {
  const auto i = static_cast<int>(blockIdx.x) * kBlock + static_cast<int>(threadIdx.x);
  if (i >= n) return;
  const AdamWParams hp{lr, beta1, beta2, eps, wd, bc1, bc2};
  const auto gi = g[i];
  const auto mi = ema(m[i], gi, hp.beta1);
  const auto vi = ema(v[i], gi * gi, hp.beta2);
  p_out[i] = adamw_update(p[i], mi, vi, hp);
  m_out[i] = mi;
  v_out[i] = vi;
}
