// star13_o2 respelled: a class with a constructor and private members, the sizes copied by
// the constructor; `at` and `has` methods; a plain for walk down z; the rings summed by hand.
class Volume {
 public:
  __device__ Volume(int w, int h, int d) : w_(w), h_(h), d_(d) {}
  __device__ __forceinline__ long long at(int k, int j, int i) const {
    return ((long long)k * h_ + j) * w_ + i;
  }
  __device__ __forceinline__ bool has(int k, int j, int i) const {
    return i >= 0 && i < w_ && j >= 0 && j < h_ && k >= 0 && k < d_;
  }

 private:
  int w_, h_, d_;
};

extern "C" __global__ void star13_o2(float* out, const float* u, int nx, int ny, int nz,
                                     float c0, float c1, float c2) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  const Volume vol(nx, ny, nz);
  for (int k = 0; k < nz; k++) {
    float r1 = 0.0f, r2 = 0.0f;
    r1 += vol.has(k, j, i - 1) ? u[vol.at(k, j, i - 1)] : 0.0f;
    r1 += vol.has(k, j, i + 1) ? u[vol.at(k, j, i + 1)] : 0.0f;
    r1 += vol.has(k, j - 1, i) ? u[vol.at(k, j - 1, i)] : 0.0f;
    r1 += vol.has(k, j + 1, i) ? u[vol.at(k, j + 1, i)] : 0.0f;
    r1 += vol.has(k - 1, j, i) ? u[vol.at(k - 1, j, i)] : 0.0f;
    r1 += vol.has(k + 1, j, i) ? u[vol.at(k + 1, j, i)] : 0.0f;
    r2 += vol.has(k, j, i - 2) ? u[vol.at(k, j, i - 2)] : 0.0f;
    r2 += vol.has(k, j, i + 2) ? u[vol.at(k, j, i + 2)] : 0.0f;
    r2 += vol.has(k, j - 2, i) ? u[vol.at(k, j - 2, i)] : 0.0f;
    r2 += vol.has(k, j + 2, i) ? u[vol.at(k, j + 2, i)] : 0.0f;
    r2 += vol.has(k - 2, j, i) ? u[vol.at(k - 2, j, i)] : 0.0f;
    r2 += vol.has(k + 2, j, i) ? u[vol.at(k + 2, j, i)] : 0.0f;
    out[vol.at(k, j, i)] = c0 * u[vol.at(k, j, i)] + c1 * r1 + c2 * r2;
  }
}
