// The upper triangle of C = A Aᵀ (A [n, k] row-major, C [n, n]): C[r][c] for c >= r, zeros
// below. A plain struct holds the tile routine as a static member function template,
// instantiated at 8 by the kernel; block indices are named first, the tiles are filled by
// if / else, and blocks wholly below the diagonal fill their zeros and leave.
// Launch: grid = ((n + 7) / 8, (n + 7) / 8), block = (8, 8).

struct UpperSyrk {
 public:
  template <int T>
  static __device__ void tile(float* __restrict__ out, const float* __restrict__ a, int n,
                              int k) {
    __shared__ float lhs[T][T + 1];
    __shared__ float rhs[T][T + 1];
    const int bi = blockIdx.y, bj = blockIdx.x;
    const int r = bi * T + threadIdx.y;
    const int c = bj * T + threadIdx.x;
    if (bi > bj) {  // wholly below the diagonal
      if (r < n && c < n) out[(size_t)r * n + c] = 0.0f;
      return;
    }
    const int c_row = bj * T + threadIdx.y;
    float acc = 0.0f;
    for (int t = 0; t < k; t += T) {
      if (r < n && t + threadIdx.x < k)
        lhs[threadIdx.y][threadIdx.x] = a[(size_t)r * k + t + threadIdx.x];
      else
        lhs[threadIdx.y][threadIdx.x] = 0.0f;
      if (c_row < n && t + threadIdx.x < k)
        rhs[threadIdx.y][threadIdx.x] = a[(size_t)c_row * k + t + threadIdx.x];
      else
        rhs[threadIdx.y][threadIdx.x] = 0.0f;
      __syncthreads();
      for (int q = 0; q < T; ++q) acc += lhs[threadIdx.y][q] * rhs[threadIdx.x][q];
      __syncthreads();
    }
    if (r < n && c < n) out[(size_t)r * n + c] = (c >= r) ? acc : 0.0f;
  }
};

extern "C" __global__ void syrk_upper(float* __restrict__ out, const float* __restrict__ a,
                                      int n, int k) {
  UpperSyrk::tile<8>(out, a, n, k);
}
