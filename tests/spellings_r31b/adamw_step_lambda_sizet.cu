// One AdamW step, out of place: a size_t index, a lambda for the moving averages, the
// hyper-parameters gathered in a struct with a member function, an early return.
// Launch: grid = ((n + 255) / 256), block = (256).

#ifndef BLOCK
#define BLOCK 256
#endif

struct Hyper {
  float lr, eps, wd, bc1, bc2;
  __device__ float step(float p, float m, float v) const {
    const float denom = sqrtf(v / bc2) + eps;
    return p - lr * ((m / bc1) / denom + wd * p);
  }
};

extern "C" __global__ void adamw_step(float* __restrict__ p_out, float* __restrict__ m_out,
                                      float* __restrict__ v_out, const float* __restrict__ p,
                                      const float* __restrict__ g, const float* __restrict__ m,
                                      const float* __restrict__ v, int n, float lr, float beta1,
                                      float beta2, float eps, float wd, float bc1, float bc2) {
  const size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i >= (size_t)n) return;
  auto average = [](float old, float sample, float beta) {
    return beta * old + (1.0f - beta) * sample;
  };
  const Hyper hp{lr, eps, wd, bc1, bc2};
  const float grad = g[i];
  const float m1 = average(m[i], grad, beta1);
  const float v1 = average(v[i], grad * grad, beta2);
  m_out[i] = m1;
  v_out[i] = v1;
  p_out[i] = hp.step(p[i], m1, v1);
}
