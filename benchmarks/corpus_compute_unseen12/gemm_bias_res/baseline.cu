// D = A B + bias + R: A [m, k], B [k, n], a bias per column of D and a residual R [m, n]
// added in the epilogue (all row-major floats). The tile product is a function template
// instantiated at 16: a 16 x 16 block computes one 16 x 16 tile of D, one element per
// thread, staging 16-wide slices of A and B in shared memory. The sizes travel in a struct.
// Launch: grid = ((n + 15) / 16, (m + 15) / 16), block = (16, 16).

struct GemmDims {
  int m, n, k;
};

template <int TILE>
__device__ void tile_product_epilogue(float* D, const float* A, const float* B,
                                      const float* bias, const float* R, GemmDims d) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < d.k; t += TILE) {
    As[ty][tx] = (row < d.m && t + tx < d.k) ? A[(size_t)row * d.k + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < d.k && col < d.n) ? B[(size_t)(t + ty) * d.n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int q = 0; q < TILE; ++q) acc += As[ty][q] * Bs[q][tx];
    __syncthreads();
  }
  if (row < d.m && col < d.n) {
    const size_t at = (size_t)row * d.n + col;
    D[at] = acc + bias[col] + R[at];
  }
}

extern "C" __global__ void gemm_bias_res(float* D, const float* A, const float* B,
                                         const float* bias, const float* R, int m, int n,
                                         int k) {
  GemmDims dims = {m, n, k};
  tile_product_epilogue<16>(D, A, B, bias, R, dims);
}
