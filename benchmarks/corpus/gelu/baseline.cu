// GELU (tanh approximation) over a flat float array, one element per thread.
// Launch: grid = (n + 255) / 256, block = 256.
extern "C" __global__ void gelu(float* __restrict__ y, const float* __restrict__ x, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) {
    float v = x[i];
    float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
  }
}
