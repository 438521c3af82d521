// Split-K product: P[s] = A[:, K_s] B[K_s, :] for the four slices K_s of the k range
// (ks = ceil(k / 4) deep each, the last one shorter), A [m, k], B [k, n], P [4, m, n], all
// row-major floats; the caller adds the four slices. blockIdx.z is the slice. A 16 x 16
// block computes one 16 x 16 tile of its slice, one element per thread, staging 16-deep
// pieces of A and B in shared memory. Matrices are read through a small view class.
// Launch: grid = ((n + 15) / 16, (m + 15) / 16, 4), block = (16, 16).

constexpr int kTile = 16;
constexpr int kSplits = 4;

// A row-major view whose reads past (rows, cols) give 0; ld is the row stride.
class RowMajor {
 public:
  __device__ RowMajor(const float* base, int ld, int rows, int cols)
      : p_(base), ld_(ld), rows_(rows), cols_(cols) {}
  __device__ float get(int r, int c) const {
    return (r < rows_ && c < cols_) ? p_[(size_t)r * ld_ + c] : 0.0f;
  }

 private:
  const float* p_;
  int ld_, rows_, cols_;
};

extern "C" __global__ void gemm_splitk4(float* P, const float* A, const float* B, int m, int n,
                                        int k) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  const int slice = blockIdx.z;
  const int ks = (k + kSplits - 1) / kSplits;
  const int k_begin = slice * ks;
  const int k_end = min(k, k_begin + ks);
  const RowMajor a(A, k, m, k_end), b(B, n, k_end, n);
  float acc = 0.0f;
  int k0 = k_begin;
  while (k0 < k_end) {
    as[ty][tx] = a.get(row, k0 + tx);
    bs[ty][tx] = b.get(k0 + ty, col);
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 16; ++q) acc += as[ty][q] * bs[q][tx];
    __syncthreads();
    k0 += kTile;
  }
  if (row < m && col < n) P[((size_t)slice * m + row) * n + col] = acc;
}
