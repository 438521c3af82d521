// E[b] = exp(A[b]) for a batch of 4 x 4 matrices (row-major, 16 floats each): the Taylor
// series I + A + A^2/2! + ... summed until a term's largest entry drops to 1e-8 (at most
// 40 terms). Each thread owns one matrix; a small matrix class with an index helper holds
// the running term and the sum in registers.
// Launch: grid = ((nb + 127) / 128), block = (128).

struct Mat4 {
  float v[16];
  __device__ float& at(int r, int c) { return v[r * 4 + c]; }
  __device__ float at(int r, int c) const { return v[r * 4 + c]; }
};

extern "C" __global__ void expm4_taylor(float* E, const float* A, int nb) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= nb) return;
  const float* src = A + (size_t)b * 16;
  Mat4 a, term, sum;
  for (int e = 0; e < 16; ++e) {
    a.v[e] = src[e];
    term.v[e] = (e % 5 == 0) ? 1.0f : 0.0f;
    sum.v[e] = term.v[e];
  }
  int k = 1;
  float largest;
  do {
    Mat4 next;
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) {
        float s = 0.0f;
        for (int q = 0; q < 4; ++q) s += term.at(r, q) * a.at(q, c);
        next.at(r, c) = s / (float)k;
      }
    }
    term = next;
    largest = 0.0f;
    for (int e = 0; e < 16; ++e) {
      sum.v[e] += term.v[e];
      largest = fmaxf(largest, fabsf(term.v[e]));
    }
    ++k;
  } while (largest > 1e-8f && k <= 40);
  float* dst = E + (size_t)b * 16;
  for (int e = 0; e < 16; ++e) dst[e] = sum.v[e];
}
